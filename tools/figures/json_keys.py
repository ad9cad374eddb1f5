"""The JSON key language: resolving a key in a document and comparing the value it reaches
with a quote."""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any

from .errors import FigureError
from .values import NUM_RE, decimals, is_number, norm, occurs, token_value

SCALE_RE = re.compile(r"^(?P<path>.*?)\s*\*\s*(?P<scale>\d+(?:\.\d+)?)$")
_PART_RE = re.compile(r"(?P<name>[^\[\]]*)(?P<brackets>(?:\[[^\[\]]*\])*)")
_MISSING = object()


def _split_key(key: str) -> list[str]:
    """The dot-separated parts of a JSON key (dots inside brackets do not split)."""
    parts, depth, start = [], 0, 0
    for i, char in enumerate(key):
        if char == "[":
            depth += 1
            if depth > 1:
                raise FigureError(f"key {key!r}: brackets inside brackets")
        elif char == "]":
            depth -= 1
            if depth < 0:
                raise FigureError(f"key {key!r}: ']' without '['")
        elif char == "." and depth == 0:
            parts.append(key[start:i])
            start = i + 1
    if depth:
        raise FigureError(f"key {key!r}: '[' without ']'")
    parts.append(key[start:])
    return parts


def _field_equals(value: object, wanted: str) -> bool:
    if isinstance(value, str):
        return norm(value) == norm(wanted)
    if isinstance(value, bool):
        return wanted.strip() == ("true" if value else "false")
    if is_number(value):
        try:
            return Decimal(wanted.strip()) == Decimal(repr(value))
        except ArithmeticError:
            return False
    return False


def _select(node: Any, filters: list[tuple[str, str]], where: str) -> tuple[Any, str]:
    shown = "".join(f"[{f}={v}]" for f, v in filters)
    if not isinstance(node, list):
        raise FigureError(f"{where or 'the file'} is not a list: {shown} selects from lists")
    hits = [
        i
        for i, item in enumerate(node)
        if isinstance(item, dict)
        and all(_field_equals(item.get(f, _MISSING), v) for f, v in filters)
    ]
    if len(hits) != 1:
        which = "no item" if not hits else f"{len(hits)} items ({', '.join(map(str, hits[:8]))})"
        raise FigureError(f"{where}{shown} selects {which} of {len(node)}; expected exactly one")
    return node[hits[0]], f"{where}[{hits[0]}]"


def _step(node: Any, name: str, where: str) -> tuple[Any, str]:
    if isinstance(node, dict):
        if name not in node:
            keys = ", ".join(sorted(node)[:12]) + (", ..." if len(node) > 12 else "")
            raise FigureError(f"{where or 'the file'} has no key {name!r} (it has: {keys})")
        return node[name], f"{where}.{name}" if where else name
    if isinstance(node, list):
        if not name.isdigit():
            raise FigureError(
                f"{where or 'the file'} is a list: expected an index or [field=value], got {name!r}"
            )
        index = int(name)
        if index >= len(node):
            raise FigureError(
                f"{where or 'the file'}: index {index} out of range (0-{len(node) - 1})"
            )
        return node[index], f"{where}.{index}" if where else str(index)
    raise FigureError(f"{where} is a {type(node).__name__}: it has no part {name!r}")


def resolve_json(document: Any, key: str) -> Any:
    """The value ``key`` (a JSON key as in the package doc, without ``*SCALE``) selects."""
    node, where = document, ""
    for part in _split_key(key):
        match = _PART_RE.fullmatch(part)
        if match is None or not part:
            raise FigureError(f"key {key!r}: empty or malformed part {part!r}")
        if match["name"]:
            node, where = _step(node, match["name"], where)
        filters: list[tuple[str, str]] = []
        for inner in re.findall(r"\[([^\[\]]*)\]", match["brackets"]):
            if inner.isdigit() or (len(inner) >= 2 and inner[0] == inner[-1] == '"'):
                if filters:
                    node, where = _select(node, filters, where)
                    filters = []
                name = inner if inner.isdigit() else inner[1:-1]
                if not inner.isdigit() and not isinstance(node, dict):
                    raise FigureError(f"{where or 'the file'} is not an object: [{inner}]")
                node, where = _step(node, name, where)
            elif "=" in inner and inner.split("=", 1)[0].strip():
                name, wanted = inner.split("=", 1)
                filters.append((name.strip(), wanted))
            else:
                raise FigureError(
                    f'key {key!r}: [{inner}] is neither an index, a "key" nor field=value'
                )
        if filters:
            node, where = _select(node, filters, where)
    return node


def _estimate(value: Any) -> list[float] | None:
    """[point, low, high] of an estimate object, else None."""
    if not isinstance(value, dict):
        return None
    if all(is_number(value.get(k)) for k in ("value", "low", "high")):
        return [value["value"], value["low"], value["high"]]
    ci = value.get("ci")
    if isinstance(ci, list) and len(ci) == 2 and all(is_number(x) for x in ci):
        points = [k for k in ("value", "accuracy", "mean") if is_number(value.get(k))]
        if len(points) == 1:
            return [value[points[0]], ci[0], ci[1]]
    return None


def compare_json(value: Any, quoted: str, scale: Decimal | None, key: str) -> None:
    """Raise ``FigureError`` unless ``quoted`` states ``value`` (see the package doc)."""
    text = norm(quoted)
    if isinstance(value, str):
        if not occurs(text, norm(value)):
            raise FigureError(f"quoted {quoted!r} does not occur in {key} = {value!r}")
        return
    if is_number(value):
        numbers, form = [value], "#"
    elif isinstance(value, list) and value and all(is_number(v) for v in value):
        numbers, form = list(value), "[" + ",".join("#" * len(value)) + "]"
    elif _estimate(value) is not None:
        numbers, form = _estimate(value), "#[#,#]"
    else:
        raise FigureError(
            f"{key} is {type(value).__name__} {str(value)[:60]!r}: a marker quotes a number, a "
            "list of numbers, an estimate (value, low, high) or a string"
        )
    tokens = NUM_RE.findall(text)
    skeleton = NUM_RE.sub("#", text).replace(" ", "")
    if "%" in skeleton:
        if scale != 100:
            raise FigureError(f"quoted {quoted!r}: '%' needs a key ending in *100")
        skeleton = skeleton.replace("#%", "#")
    shape = form.replace("#", "N")
    if skeleton != form:
        raise FigureError(f"quoted {quoted!r} is not of the form {shape} that {key} gives")
    factor = scale if scale is not None else Decimal(1)
    expected = [
        f"{Decimal(repr(float(n))) * factor:.{decimals(t)}f}" for n, t in zip(numbers, tokens)
    ]
    if any(token_value(t) != Decimal(e) for t, e in zip(tokens, expected)):
        replacements = iter(expected)
        said = NUM_RE.sub(lambda _: next(replacements), text)
        raise FigureError(
            f"figure differs: quoted {quoted!r}, the data gives {said!r} ({key} = {value})"
        )
