"""Measured figures quoted in the documentation, checked against the data files that hold them.

    python -m tools.figures check [--root .]

Every measured figure quoted in README.md, in docs/**/*.md (docs/data/ excepted) and in the
docstrings of hear2act_env/ and agents/ comes from a file under docs/data/ that the command
which measured it wrote, and is quoted inside a marker: an HTML comment, invisible once the
page is rendered::

    <!--fig:FILE#KEY-->QUOTED TEXT<!--/fig-->

FILE is a path relative to docs/data/ (never absolute, never through ``..`` or a link that
leads out). The text between the two comments may wrap over lines. KEY picks one figure:

* In a JSON file, a path of parts joined by dots. A part is a key of an object, or an index
  into a list (``figures.3.estimate``); brackets after a part refine it: ``[3]`` an index,
  ``["a.b"]`` a key holding dots, ``[field=value]`` the single item of a list of objects whose
  ``field`` equals ``value`` (several brackets in a row must all hold:
  ``figures[attacker=ranker (linear)][scenarios=test].estimate``). A part that selects no item,
  or several, is an error. A final ``*100`` (any number) scales numbers, for percentages.
  What KEY reaches decides what QUOTED must be:

  - a number: QUOTED is that number rounded to as many decimals as QUOTED shows (``0.897`` for
    0.89705...; thousands separators and a leading ``+`` allowed, a trailing ``%`` with
    ``*100``);
  - a list of numbers: ``[lo, hi]`` (any length), each rounded the same way;
  - an estimate, an object with the numbers ``value``, ``low`` and ``high`` (or with one of
    the numbers ``value``, ``accuracy``, ``mean`` and a two-number list ``ci``): ``v [lo, hi]``;
  - a string: QUOTED occurs in it.

* In any other file (tables and logs written by commands), KEY is a literal piece of exactly
  one line (several pieces joined by `` && `` must all occur in it). Where the same row label
  comes back in several tables of one file, ``HEADING >> ROW`` picks the first line holding
  ROW after the one line holding HEADING (``>>`` may repeat). QUOTED must occur in that
  line, and not as part of a longer number. Both sides are compared with whitespace runs as
  one space, thousands separators dropped and a ``%`` after a number left out; a leading
  ``+`` of QUOTED is left out too.

A block copied from a text data file, a fenced code block or a table, is quoted whole with
``<!--figblock:FILE-->`` on the line before it: each of its non-blank lines must occur in
some line of FILE.

docs/data/SOURCES.json, the manifest, gives for each data file the command that writes it
and the code version it claims (``claims``): ``bank_sha256`` (a prefix of the SHA-256 of the
shipped bank's bytes, as ``hear2act_env.scenarios.bank.load_bank`` computes it),
``bank_version`` (``BANK_VERSION``), ``prosody_table`` and ``voices`` (prefixes of the prosody
and voice table digests), ``renderer_revisions`` ({renderer name: its revision, the first part
of its ``version``}) and ``package_version``. The check recomputes each claim from the code; a
data file whose claims do not hold is stale: run its command again. A file kept from an
earlier version on purpose (a comparison) says ``"historical": true``; its claims are not
recomputed, and it is quoted with ``fig-historical`` / ``figblock-historical`` instead, so
that whoever reads the page source sees it. A plain marker on a historical file, or a
historical one on a current file, is an error; so is a data file without an entry, and an
entry without a file.

A bootstrap CI (``0.146 [0.146, 0.147]``, ``87.3 [84.4, 90.2]``) outside any marker, code
blocks included, is an error too: a copy that escaped the check. Markers inside code spans or
fenced code blocks are not read, so a page can show the syntax.

Exit status 0 with a one-line summary, or 1 with one ``FILE:LINE: problem`` line each.
Keys are parsed, never evaluated; only the standard library and ``hear2act_env`` are used.
"""

from __future__ import annotations

from .checker import check
from .cli import main
from .errors import FigureError
from .report import Problem, Report

__all__ = ["FigureError", "Problem", "Report", "check", "main"]
