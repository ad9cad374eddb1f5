"""The figure check (``python -m tools.figures check``): quoted figures agree with docs/data/.

Each test builds a small repository in ``tmp_path`` (data files, a manifest, pages, a module
with docstrings) and runs the check on it; the last one runs it on this repository.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from hear2act_env.scenarios.bank import BANK_PATH, BANK_VERSION
from tools.figures import check, main

ROOT = Path(__file__).resolve().parents[2]
BANK_SHA = hashlib.sha256(BANK_PATH.read_bytes()).hexdigest()

AUDIT = {
    "sha256": BANK_SHA,
    "figures": [
        {
            "name": "exact top-1",
            "split": "all",
            "estimate": {"value": 0.14634, "low": 0.14581, "high": 0.1469},
        },
        {
            "name": "ranker",
            "split": "test",
            "estimate": {"value": 0.1152, "low": 0.0521, "high": 0.1771},
        },
        {
            "name": "ranker",
            "split": "all",
            "estimate": {"value": 0.1291, "low": 0.1003, "high": 0.1628},
        },
    ],
    "accuracy": 0.8970588235294118,
    "ci": [0.8578431372549019, 0.9362745098039216],
    "probe": [{"name": "encoder", "accuracy": 0.8235294, "ci": [0.7696078, 0.8725490]}],
    "steps": 55917,
    "note": "pitch 0.735, energy 0.770, timing 0.696",
}
TABLE = """\
agent         realization condition      n   success
random        prosody     T            480   7.7 [5.4, 10.0]
state-aware   prosody     A+T/inferred 480   87.3 [84.4, 90.2]
state-aware   explicit    A+T/inferred 480   100.0 [100.0, 100.0]
calls              1272
Behaviour
state-aware   prosody     A+T/inferred 480   31.2 [22.9, 40.6]
"""
OLD = "exact Bayes top-1 | 0.817 [0.790, 0.844]\n"


def make_repo(
    root: Path,
    pages: dict[str, str],
    manifest: dict | None = None,
    extra_data: dict[str, str] | None = None,
) -> Path:
    data = root / "docs" / "data"
    data.mkdir(parents=True)
    (data / "audit.json").write_text(json.dumps(AUDIT), encoding="utf-8")
    (data / "table.txt").write_text(TABLE, encoding="utf-8")
    (data / "old.md").write_text(OLD, encoding="utf-8")
    for name, text in (extra_data or {}).items():
        (data / name).write_text(text, encoding="utf-8")
    if manifest is None:
        current = {"bank_sha256": BANK_SHA[:12], "bank_version": BANK_VERSION}
        manifest = {
            "files": {
                "audit.json": {"command": "make audit", "claims": current},
                "table.txt": {"command": "make table", "claims": current},
                "old.md": {
                    "command": "make old",
                    "claims": {"bank_version": BANK_VERSION - 1},
                    "historical": True,
                },
            }
        }
    (data / "SOURCES.json").write_text(json.dumps(manifest, indent=2), encoding="utf-8")
    for name, text in pages.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def problems(root: Path) -> list[str]:
    return [str(p) for p in check(root).problems]


def one_problem(root: Path) -> str:
    found = problems(root)
    assert len(found) == 1, found
    return found[0]


GOOD_PAGE = """\
# Results

Exact top-1: <!--fig:audit.json#figures[name=exact top-1].estimate-->0.146 [0.146,
0.147]<!--/fig--> (the text may wrap). The ranker on the test split:
<!--fig:audit.json#figures[name=ranker][split=test].estimate.value-->0.115<!--/fig-->; by
index: <!--fig:audit.json#figures.2.estimate.high-->0.163<!--/fig-->.

| figure | value |
| --- | --- |
| perceiver | <!--fig:audit.json#accuracy*100-->89.7%<!--/fig--> <!--fig:audit.json#ci-->[0.858, 0.936]<!--/fig--> |
| probe | <!--fig:audit.json#probe[name=encoder]-->0.824 [0.770, 0.873]<!--/fig--> |
| env | <!--fig:audit.json#steps-->55,917<!--/fig--> steps/s, timing <!--fig:audit.json#note-->timing 0.696<!--/fig--> |

Voice-inferred: <!--fig:table.txt#agent >> state-aware && prosody-->87.3 [84.4, 90.2]<!--/fig-->,
closing early <!--fig:table.txt#Behaviour >> state-aware prosody A+T/inferred-->31.2 [22.9, 40.6]<!--/fig-->,
calls <!--fig:table.txt#calls-->1,272<!--/fig-->, <!--fig:table.txt#random-->+7.7% [5.4, 10.0]<!--/fig-->; on bank v2,
<!--fig-historical:old.md#exact Bayes top-1-->0.817 [0.790, 0.844]<!--/fig-->.

<!--figblock:table.txt-->
```
random        prosody     T            480   7.7 [5.4, 10.0]
state-aware   explicit    A+T/inferred 480   100.0 [100.0, 100.0]
```

The syntax, shown and not read: `<!--fig:nowhere.json#x-->1<!--/fig-->`.
"""

MODULE = '''\
"""A module.

The perceiver reaches <!--fig:audit.json#accuracy-->0.897<!--/fig--> on held-out voices.
"""


def f():
    """Nothing measured here: values in [-1, 1]."""
'''


def test_marked_figures_that_match_pass(tmp_path, capsys):
    root = make_repo(
        tmp_path,
        {"README.md": GOOD_PAGE, "docs/guide/page.md": GOOD_PAGE, "hear2act_env/mod.py": MODULE},
    )
    assert problems(root) == []
    assert main(["check", "--root", str(root)]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    assert out == ["figures: 29 markers in 3 files (3 scanned), 3 data files: all agree"]


@pytest.mark.parametrize(
    ("marked", "said"),
    [
        (  # the case: a docstring range against the measured value
            "<!--fig:audit.json#accuracy-->0.931<!--/fig-->",
            "quoted '0.931', the data gives '0.897'",
        ),
        (  # a CI off by one in the last digit (docs/rl.md against the README)
            "<!--fig:audit.json#figures[name=exact top-1].estimate-->0.146 [0.146, 0.148]<!--/fig-->",
            "the data gives '0.146 [0.146, 0.147]'",
        ),
        ("<!--fig:audit.json#accuracy-->0.89<!--/fig-->", "the data gives '0.90'"),
        ("<!--fig:audit.json#accuracy*100-->0.897%<!--/fig-->", "the data gives '89.706%'"),
        ("<!--fig:audit.json#accuracy-->89.7%<!--/fig-->", "'%' needs a key ending in *100"),
        ("<!--fig:audit.json#ci-->0.858<!--/fig-->", "not of the form [N,N]"),
        ("<!--fig:audit.json#steps-->55,971<!--/fig-->", "the data gives '55917'"),
        ("<!--fig:audit.json#note-->timing 0.69<!--/fig-->", "does not occur in"),
        ("<!--fig:table.txt#calls-->1,444<!--/fig-->", "is not in line 5 of docs/data/table.txt"),
        # a figure that is part of a longer number in the line does not count
        ("<!--fig:table.txt#calls-->127<!--/fig-->", "is not in line 5"),
        ("<!--fig:table.txt#random-->7.7 [5.4, 10]<!--/fig-->", "is not in line 2"),
        ("<!--fig:table.txt#random-->-7.7<!--/fig-->", "is not in line 2"),
    ],
)
def test_a_planted_disagreement_fails_with_its_line(tmp_path, capsys, marked, said):
    page = f"# Page\n\nSome text.\nThe figure: {marked} and more.\n"
    root = make_repo(tmp_path, {"docs/page.md": page})
    found = one_problem(root)
    assert found.startswith("docs/page.md:4: "), found
    assert said in found, found
    assert main(["check", "--root", str(root)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0] == found
    assert out[-1].endswith("1 problems")


def test_a_disagreement_in_a_docstring_names_the_module_line(tmp_path):
    module = MODULE.replace(">0.897<", ">0.92<")
    root = make_repo(tmp_path, {"agents/sub/mod.py": module})
    found = one_problem(root)
    assert found.startswith("agents/sub/mod.py:3: figure differs: quoted '0.92'"), found


def test_a_block_line_missing_from_the_data_file_fails_at_that_line(tmp_path):
    page = GOOD_PAGE.replace("100.0 [100.0, 100.0]\n```", "99.0 [100.0, 100.0]\n```")
    root = make_repo(tmp_path, {"README.md": page})
    found = one_problem(root)
    line = page.splitlines().index(next(x for x in page.splitlines() if "99.0 [" in x)) + 1
    assert found.startswith(f"README.md:{line}: figure differs: this line of the block"), found


def test_a_stale_claim_fails(tmp_path):
    stale = {"bank_sha256": "00000000aaaa", "bank_version": BANK_VERSION}
    manifest = {
        "files": {
            "audit.json": {"command": "make audit", "claims": stale},
            "table.txt": {"command": "make table", "claims": {"bank_version": BANK_VERSION + 1}},
            "old.md": {"command": "make old", "claims": {"bank_version": 1}, "historical": True},
        }
    }
    root = make_repo(tmp_path, {}, manifest)
    assert problems(root) == [
        f"docs/data/audit.json:1: stale: claims bank_sha256 00000000aaaa, the code has "
        f"{BANK_SHA[:12]}; measure it again (make audit) or mark it historical in SOURCES.json",
        f"docs/data/table.txt:1: stale: claims bank_version {BANK_VERSION + 1}, the code has "
        f"{BANK_VERSION}; measure it again (make table) or mark it historical in SOURCES.json",
    ]


def test_the_manifest_covers_every_data_file_and_only_real_ones(tmp_path):
    root = make_repo(tmp_path, {}, extra_data={"new.json": "{}"})
    manifest = json.loads((root / "docs/data/SOURCES.json").read_text())
    manifest["files"]["gone.md"] = {"command": "x", "claims": {"bank_version": BANK_VERSION}}
    manifest["files"]["audit.json"]["claims"]["bank_sha"] = "2a23d4f9"
    manifest["files"]["table.txt"]["historic"] = True
    (root / "docs/data/SOURCES.json").write_text(json.dumps(manifest, indent=2))
    found = problems(root)
    assert any(
        f.startswith("docs/data/new.json:1: no entry in docs/data/SOURCES.json") for f in found
    )
    assert any("SOURCES.json" in f and "gone.md: no such file under docs/data/" in f for f in found)
    assert any("audit.json: claims: unknown claim 'bank_sha'" in f for f in found)
    assert any("table.txt: unknown field 'historic'" in f for f in found)
    assert len(found) == 4, found


@pytest.mark.parametrize(
    ("marked", "said"),
    [
        ("<!--fig:old.md#exact Bayes top-1-->0.817 [0.790, 0.844]<!--/fig-->", "is historical"),
        ("<!--fig-historical:table.txt#calls-->1272<!--/fig-->", "is current, not historical"),
    ],
)
def test_historical_files_need_historical_markers(tmp_path, marked, said):
    root = make_repo(tmp_path, {"README.md": f"x\n{marked}\n"})
    found = one_problem(root)
    assert found.startswith("README.md:2: ") and said in found, found


def test_an_unmarked_ci_fails_in_text_and_in_code(tmp_path):
    page = (
        "Success 87.3 [84.4, 90.2] on the voice.\n\n"
        "```\nstate-aware   prosody     A+T/inferred 480   87.3 [84.4, 90.2]\n```\n"
        "Not a figure: values in [-1, 1], shape (2, 3) [0, 1].\n"
        "Docs v2 [1, 2] and x[0.1, 0.2] are not CIs either.\n"
    )
    root = make_repo(
        tmp_path, {"docs/page.md": page, "hear2act_env/m.py": '"""Ours 0.146 [0.146, 0.147]."""\n'}
    )
    found = problems(root)
    assert [f.split(": ")[0] for f in found] == [
        "docs/page.md:1",
        "docs/page.md:4",
        "hear2act_env/m.py:1",
    ]
    assert all("unmarked figure" in f for f in found)
    assert "'87.3 [84.4, 90.2]'" in found[0]


@pytest.mark.parametrize(
    ("marked", "said"),
    [
        (
            "<!--fig:audit.json#figures[name=nobody].estimate-->0.1<!--/fig-->",
            "selects no item of 3",
        ),
        (
            "<!--fig:audit.json#figures[name=ranker].estimate-->0.1<!--/fig-->",
            "selects 2 items (1, 2)",
        ),
        (
            "<!--fig:audit.json#accuracy.value-->0.1<!--/fig-->",
            "is a float: it has no part 'value'",
        ),
        ("<!--fig:audit.json#acuracy-->0.1<!--/fig-->", "has no key 'acuracy'"),
        ("<!--fig:audit.json#figures.7-->0.1<!--/fig-->", "index 7 out of range"),
        ("<!--fig:audit.json#figures-->0.1<!--/fig-->", "a marker quotes a number"),
        ("<!--fig:audit.json#__import__('os').system('x')-->0.1<!--/fig-->", "has no key"),
        ("<!--fig:audit.json#figures[0-->0.1<!--/fig-->", "'[' without ']'"),
        (
            "<!--fig:table.txt#state-aware-->87.3 [84.4, 90.2]<!--/fig-->",
            "matches 3 lines (3, 4, 7)",
        ),
        ("<!--fig:table.txt#Behaviour >> random-->7.7<!--/fig-->", "no line after line 6"),
        ("<!--fig:table.txt#agent >> explicit-->87.3<!--/fig-->", "is not in line 4"),
        ("<!--fig:table.txt#nobody-->1<!--/fig-->", "matches no line"),
        ("<!--fig:missing.json#a-->1<!--/fig-->", "docs/data/missing.json: no such data file"),
        ("<!--fig:audit.json-->1<!--/fig-->", "expected FILE#KEY"),
        ("<!--fig:audit.json#accuracy--><!--/fig-->", "quotes nothing"),
    ],
)
def test_a_missing_key_or_an_ambiguous_line_fails(tmp_path, marked, said):
    root = make_repo(tmp_path, {"docs/page.md": f"Text\n\n{marked}\n"})
    found = one_problem(root)
    assert found.startswith("docs/page.md:3: ") and said in found, found


@pytest.mark.parametrize(
    "target",
    [
        "../../README.md",
        "../data/audit.json",
        "/etc/passwd",
        "./audit.json",
        "a\\b.json",
        "SOURCES.json",
    ],
)
def test_a_marker_outside_docs_data_is_refused(tmp_path, target):
    root = make_repo(tmp_path, {"README.md": f"<!--fig:{target}#x-->1<!--/fig-->\n"})
    found = one_problem(root)
    assert found.startswith("README.md:1: "), found
    assert "docs/data/" in found and "no such data file" not in found, found


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="needs symbolic links")
def test_a_link_leading_out_of_docs_data_is_refused(tmp_path):
    (tmp_path / "secret.txt").write_text("calls 1272\n")
    root = make_repo(tmp_path / "repo", {"README.md": "<!--fig:out.txt#calls-->1272<!--/fig-->\n"})
    os.symlink(tmp_path / "secret.txt", root / "docs/data/out.txt")
    found = problems(root)
    assert any(f.startswith("README.md:1: 'out.txt': leads out of docs/data/") for f in found), (
        found
    )


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("<!--fig:audit.json#accuracy-->0.897\n\nno end\n", "not closed with <!--/fig-->"),
        ("0.897<!--/fig-->\n", "<!--/fig--> without an opening marker"),
        ("<!--fig audit.json#accuracy-->0.897<!--/fig-->\n", "malformed marker"),
        ("<!--fig:audit.json#accuracy\n-->0.897<!--/fig-->\n", "malformed marker"),
        ("<!--figure:audit.json#accuracy-->0.897<!--/fig-->\n", "malformed marker"),
        ("<!--figblock:table.txt-->\n\n", "no block follows"),
    ],
)
def test_a_malformed_marker_fails(tmp_path, text, said):
    root = make_repo(tmp_path, {"docs/page.md": text})
    found = problems(root)
    assert found and found[0].startswith("docs/page.md:1: "), found
    assert any(said in f for f in found), found


def test_the_repository_manifest_and_markers_hold():
    """Every data file has a current (or historical) entry, and every marker in the pages and
    docstrings agrees (unmarked figures are the next test's concern)."""
    found = [str(p) for p in check(ROOT).problems if "unmarked figure" not in p.message]
    assert found == []


def test_the_repository_figures_agree(capsys):
    assert main(["check", "--root", str(ROOT)]) == 0, capsys.readouterr().out
