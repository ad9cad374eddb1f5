"""hear2act view: a static site of a results folder (site.py) from replayed episodes (replay.py)."""
