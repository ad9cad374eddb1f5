"""The benchmark for people: ``hear2act view`` (a static site of results, with every user turn's
audio), ``hear2act play`` (a person plays the assistant in the browser) and ``hear2act audit``
(the perception audit of a renderer's reaction clips). Needs the ``listen`` extra."""
