"""The benchmark for people, one folder per app with what they share beside them:

- ``view/``: ``hear2act view``, a static site of results with every user turn's audio;
- ``play/``: ``hear2act play``, a person plays the assistant in the browser;
- ``audit/``: ``hear2act audit``, the perception audit of a renderer's reaction clips;
- shared: ``server.py`` (the local web server, its guards and the page templates),
  ``clips.py`` (clips as files and the guarded reading of a folder's files), ``templates/`` and
  ``static/``.

Needs the ``listen`` extra."""
