"""The README and the guides under docs/: runnable examples run, links resolve, the README stays
short.

A fenced block whose info string is ``python {.runnable}`` is an example a reader can paste:
each one runs here in a fresh namespace, one test per block, named ``file:line`` after its
opening fence (the convention is described in docs/contributing.md).
"""

from __future__ import annotations

import re
import sys
import traceback
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
README_LIMIT = 12_000  # bytes

FENCE = re.compile(r"^ {0,3}(?P<fence>`{3,}|~{3,})\s*(?P<info>[^`]*?)\s*$")
RUNNABLE_INFO = re.compile(r"^python\s+\{\s*\.runnable\s*\}$")
# [text](target) and ![alt](target); the target ends at whitespace or the closing parenthesis
LINK = re.compile(r"!?\[(?:[^\]\\]|\\.)*\]\(\s*<?(?P<target>[^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
CODE_SPAN = re.compile(r"(?P<ticks>`+).+?(?P=ticks)")
HEADING = re.compile(r"^ {0,3}#{1,6}\s+(?P<text>.+?)\s*#*\s*$")


@dataclass(frozen=True)
class Block:
    path: Path
    line: int  # 1-based line of the opening fence
    code: str

    @property
    def name(self) -> str:
        return f"{self.path.relative_to(ROOT).as_posix()}:{self.line}"


def fenced_blocks(text: str) -> list[tuple[int, str, str]]:
    """Every top-level fenced block of a Markdown text: (line of its opening fence, info
    string, body). A fence inside another fence (an example of Markdown) is body text."""
    blocks = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        fence, info = m.group("fence"), m.group("info")
        body: list[str] = []
        j = i + 1
        while j < len(lines):
            close = lines[j].strip()
            if close and set(close) == {fence[0]} and len(close) >= len(fence):
                break
            body.append(lines[j])
            j += 1
        blocks.append((i + 1, info, "\n".join(body) + "\n"))
        i = j + 1
    return blocks


def runnable_blocks(path: Path) -> list[Block]:
    text = path.read_text(encoding="utf-8")
    return [
        Block(path, line, body)
        for line, info, body in fenced_blocks(text)
        if RUNNABLE_INFO.match(info)
    ]


def markdown_files() -> list[Path]:
    return [README, *sorted(DOCS.rglob("*.md"))]


def prose_lines(text: str, code_spans: bool = False) -> list[tuple[int, str]]:
    """(line number, line) outside fenced blocks; inline code spans blanked out unless
    ``code_spans``."""
    inside: set[int] = set()
    for line, _info, body in fenced_blocks(text):
        inside.update(range(line, line + body.count("\n") + 2))
    return [
        (n, raw if code_spans else CODE_SPAN.sub("", raw))
        for n, raw in enumerate(text.splitlines(), start=1)
        if n not in inside
    ]


def slug(heading: str) -> str:
    """The anchor GitHub and the site's toc give a heading (ASCII headings)."""
    text = CODE_SPAN.sub(lambda m: m.group(0).strip("`"), heading)
    text = re.sub(r"[^\w\s-]", "", text.lower(), flags=re.UNICODE).strip()
    return re.sub(r"[\s]+", "-", text)


def anchors(path: Path) -> set[str]:
    text = path.read_text(encoding="utf-8")
    lines = prose_lines(text, code_spans=True)
    return {slug(m.group("text")) for _, line in lines if (m := HEADING.match(line))}


def broken_links(path: Path) -> list[str]:
    """Relative links of a Markdown file whose file (or Markdown heading) does not exist."""
    problems = []
    for n, line in prose_lines(path.read_text(encoding="utf-8")):
        for m in LINK.finditer(line):
            target = m.group("target")
            if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I) or target.startswith("#"):
                continue  # an absolute URL (https:, mailto:) or an anchor on the same page
            file_part, _, anchor = target.partition("#")
            resolved = (path.parent / file_part).resolve()
            where = f"{path.relative_to(ROOT).as_posix()}:{n}"
            if not resolved.exists():
                problems.append(f"{where}: {target} (no such file)")
            elif anchor and resolved.suffix == ".md" and anchor not in anchors(resolved):
                problems.append(f"{where}: {target} (no heading with that anchor)")
    return problems


BLOCKS = [block for path in markdown_files() for block in runnable_blocks(path)]


@pytest.mark.parametrize("block", BLOCKS, ids=[b.name for b in BLOCKS])
def test_runnable_block(block: Block, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # an example that writes a file writes it here
    # padded so that a traceback names the Markdown file and its own line numbers
    code = compile("\n" * block.line + block.code, str(block.path), "exec")
    exec(code, {"__name__": "__doc_example__"})  # noqa: S102 - our own documentation


def test_examples_are_collected():
    names = [b.name for b in BLOCKS]
    assert len(names) == len(set(names))
    assert any(b.path == README for b in BLOCKS), "the README's gym.make example is runnable"
    assert len({b.path for b in BLOCKS}) >= 4, names


def test_readme_is_short():
    size = len(README.read_bytes())
    assert size <= README_LIMIT, f"README.md is {size} bytes; move detail to docs/"


@pytest.mark.parametrize("path", markdown_files(), ids=lambda p: p.relative_to(ROOT).as_posix())
def test_relative_links_resolve(path: Path):
    assert broken_links(path) == []


# -- the helpers above, on planted input -----------------------------------------------------


def test_collector_reads_fences_and_skips_nested_examples(tmp_path):
    page = tmp_path / "page.md"
    page.write_text(
        "# Page\n\n"
        "```python {.runnable}\nx = 1\n```\n\n"
        "```python\nnot_run()\n```\n\n"
        "````markdown\n```python {.runnable}\nshown_not_run()\n```\n````\n\n"
        "~~~python { .runnable }\ny = 2\n~~~\n",
        encoding="utf-8",
    )
    blocks = runnable_blocks(page)
    assert [(b.line, b.code) for b in blocks] == [(3, "x = 1\n"), (17, "y = 2\n")]


def test_a_failing_example_fails_with_its_markdown_line(tmp_path, monkeypatch):
    page = tmp_path / "page.md"
    page.write_text("Text.\n\n```python {.runnable}\nok = 1\nraise ValueError('x')\n```\n")
    (block,) = runnable_blocks(page)
    with pytest.raises(ValueError) as caught:
        test_runnable_block(block, tmp_path, monkeypatch)
    last = traceback.extract_tb(caught.value.__traceback__)[-1]
    assert (last.filename, last.lineno) == (str(page), 5)


def test_link_checker_finds_missing_files_and_anchors(tmp_path, monkeypatch):
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    (tmp_path / "img.png").write_bytes(b"")
    (tmp_path / "other.md").write_text("# Other page\n\n## The `spaces`, reward and info\n")
    page = tmp_path / "page.md"
    page.write_text(
        "[ok](other.md) ![ok](img.png) [ok](other.md#the-spaces-reward-and-info)\n"
        "[web](https://example.org/x.md) [here](#top) `[code](missing.md)`\n"
        "[gone](missing.md) [bad anchor](other.md#nowhere)\n"
        "```\n[in a block](missing-too.md)\n```\n"
    )
    assert broken_links(page) == [
        "page.md:3: missing.md (no such file)",
        "page.md:3: other.md#nowhere (no heading with that anchor)",
    ]
