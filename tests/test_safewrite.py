"""The one rule every writer follows (hear2act_env.safewrite): nothing is written through a link
or outside the folder named for the output; and every writer of the package uses it."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from hear2act_env import safewrite
from hear2act_env.safewrite import UnsafeOutputError

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A file outside the output folder that a planted link points at."""
    target = tmp_path / "precious.txt"
    target.write_text("keep me\n")
    return target


def test_a_whole_file_write_replaces_a_link_and_leaves_its_target(tmp_path, outside):
    out = tmp_path / "out"
    out.mkdir()
    (out / "table.csv").symlink_to(outside)
    safewrite.write_text(out / "table.csv", "a,b\n")
    assert outside.read_text() == "keep me\n"
    assert not (out / "table.csv").is_symlink()
    assert (out / "table.csv").read_text() == "a,b\n"


@pytest.mark.parametrize("opener", ["append", "in_place", "truncate"])
def test_append_and_in_place_refuse_a_link_without_touching_its_target(tmp_path, outside, opener):
    out = tmp_path / "out"
    out.mkdir()
    link = out / "results.jsonl"
    link.symlink_to(outside)
    with pytest.raises(UnsafeOutputError, match="is a link"):
        if opener == "append":
            safewrite.open_append(link)
        else:
            safewrite.open_in_place(link, truncate=opener == "truncate")
    assert outside.read_text() == "keep me\n"


def test_a_dangling_link_is_refused_and_nothing_is_created_at_its_target(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    target = tmp_path / "elsewhere" / "new.txt"
    (out / "log.jsonl").symlink_to(target)
    with pytest.raises(UnsafeOutputError):
        safewrite.open_append(out / "log.jsonl")
    assert not target.exists()


def test_a_hard_link_a_fifo_and_a_folder_are_refused(tmp_path, outside):
    out = tmp_path / "out"
    out.mkdir()
    os.link(outside, out / "hard.jsonl")
    os.mkfifo(out / "fifo.jsonl")
    (out / "dir.jsonl").mkdir()
    with pytest.raises(UnsafeOutputError, match="2 hard links"):
        safewrite.open_append(out / "hard.jsonl")
    with pytest.raises(UnsafeOutputError, match="FIFO"):
        safewrite.open_in_place(out / "fifo.jsonl")
    with pytest.raises(UnsafeOutputError, match="folder"):
        safewrite.open_append(out / "dir.jsonl")
    with pytest.raises(UnsafeOutputError, match="folder"):
        safewrite.write_text(out / "dir.jsonl", "x")
    assert outside.read_text() == "keep me\n"


def test_a_linked_folder_below_the_root_is_refused(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (out / "report").symlink_to(elsewhere, target_is_directory=True)
    with pytest.raises(UnsafeOutputError, match="report is a link"):
        safewrite.write_text(out / "report" / "x.csv", "x", root=out)
    with pytest.raises(UnsafeOutputError):
        safewrite.ensure_folder(out / "report" / "deeper", root=out)
    assert list(elsewhere.iterdir()) == []


def test_the_named_root_may_itself_be_a_link(tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "named").symlink_to(real, target_is_directory=True)
    safewrite.write_text(tmp_path / "named" / "sub" / "a.txt", "ok", root=tmp_path / "named")
    assert (real / "sub" / "a.txt").read_text() == "ok"


def test_a_path_that_leaves_the_root_is_refused(tmp_path):
    with pytest.raises(UnsafeOutputError, match="leaves"):
        safewrite.ensure_folder(tmp_path / "out" / ".." / "x", root=tmp_path / "out")
    with pytest.raises(UnsafeOutputError, match="not inside"):
        safewrite.ensure_folder(tmp_path / "other", root=tmp_path / "out")


def test_appending_creates_and_appends_a_regular_file(tmp_path):
    path = tmp_path / "out" / "r.jsonl"
    for line in ("a\n", "b\n"):
        with safewrite.open_append(path) as fh:
            fh.write(line)
    assert path.read_text() == "a\nb\n"
    with safewrite.open_in_place(path, truncate=True) as fh:
        fh.write(b"c\n")
    assert path.read_text() == "c\n"


#: Writing calls that bypass the helper. Reading, in-memory buffers and the helper itself are fine.
_BYPASS = re.compile(
    r"(?<!safewrite)\.write_text\(|\.write_bytes\(|\.open\(\s*[\"'][wax]|[^.\w]open\([^)]*,\s*[\"'][wax]|"
    r"savefig\(\s*(?!png\b|buf\b)|shutil\.(copy|copy2|copyfile|copytree|move)\(|"
    r"\.mkdir\(|os\.makedirs\(|O_CREAT|O_TRUNC|O_APPEND"
)

#: Writers allowed to do it themselves, each with why.
_ALLOWED = {
    # the helper itself
    "hear2act_env/safewrite.py",
    # espeak-ng's data: staged in a fresh private mkdtemp folder (0700), then renamed into place
    "hear2act_env/speech/espeak.py",
    # the perception audit's label files: opened under the audit folder with O_NOFOLLOW and a
    # regular-file check (clips.open_file_under), appended with fcntl locks held by the server
    "hear2act_env/listen/audit/folder.py",
    "hear2act_env/listen/clips.py",
    # its folder checks create and remove a probe file with mkstemp (never through a link)
    "cli/outputs.py",
}


def test_every_writer_goes_through_safewrite():
    offenders = []
    for path in sorted(
        p for d in ("hear2act_env", "agents", "cli") for p in (ROOT / d).rglob("*.py")
    ):
        rel = path.relative_to(ROOT).as_posix()
        if rel in _ALLOWED:
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            code = line.split("#", 1)[0]
            if _BYPASS.search(code) and "wave.open(buf" not in code:
                offenders.append(f"{rel}:{number}: {line.strip()}")
    assert offenders == [], "write through hear2act_env.safewrite:\n" + "\n".join(offenders)
