"""Write staged domain files in one layout: ``python -m tools.bank_v4.fmt FILE...``.

A dict with no dict inside it is one line (a need, a profile, a pair rule); others open one key
per line. A list of plain values stays on one line when it is short, else it is packed into rows
(names, compatible pairs). Only the layout changes: the parsed JSON is the same.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

WIDTH = 110


def _one_line(value: object) -> str:
    return json.dumps(value, ensure_ascii=False)


def _has_dict(value: object) -> bool:
    if isinstance(value, dict):
        return True
    return isinstance(value, list) and any(_has_dict(x) for x in value)


def dump(value: object, indent: int = 0) -> str:
    """``value`` as JSON text in the staged layout, its first line not indented."""
    pad, inner = "  " * indent, "  " * (indent + 1)
    if isinstance(value, dict):
        if indent > 0 and not any(_has_dict(x) for x in value.values()):
            return _one_line(value)
        items = [f"{inner}{_one_line(k)}: {dump(x, indent + 1)}" for k, x in value.items()]
        return "{\n" + ",\n".join(items) + "\n" + pad + "}"
    if isinstance(value, list):
        if any(isinstance(x, dict) for x in value):
            return "[\n" + ",\n".join(inner + dump(x, indent + 1) for x in value) + "\n" + pad + "]"
        flat = _one_line(value)
        if len(flat) + len(pad) <= WIDTH:
            return flat
        rows, row = [], ""
        for part in (_one_line(x) for x in value):
            if row and len(inner) + len(row) + len(part) + 2 > WIDTH:
                rows.append(row)
                row = ""
            row = f"{row}, {part}" if row else part
        rows.append(row)
        return "[\n" + ",\n".join(inner + r for r in rows) + "\n" + pad + "]"
    return _one_line(value)


def main(paths: list[str]) -> None:
    for path in map(Path, paths):
        data = json.loads(path.read_text(encoding="utf-8"))
        text = dump(data) + "\n"
        assert json.loads(text) == data
        path.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main(sys.argv[1:])
