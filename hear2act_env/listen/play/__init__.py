"""hear2act play: a person plays the assistant in the browser (app.py)."""
