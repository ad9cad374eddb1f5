"""Strict JSON <-> frozen-dataclass conversion driven by type hints.

Supported field types: ``str``, ``int``, ``float``, ``bool``, ``Literal[...]``, ``Enum``
subclasses, nested dataclasses, ``tuple[X, ...]`` of those, and ``X | None``. Unknown or
missing keys and wrong types fail with the path of the field and what was expected.
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from collections.abc import Mapping
from enum import Enum
from typing import Any, Literal, TypeVar, Union, get_args, get_origin

T = TypeVar("T")


#: Field metadata: leave the field out of ``to_jsonable`` while it holds its default (a field
#: added to a format after data was written, so the older data keeps its bytes).
OMIT_DEFAULT = {"omit_default": True}


def to_jsonable(value: Any) -> Any:
    """Dataclasses to dicts, tuples to lists, enums to their values (recursively)."""
    if isinstance(value, Enum):
        return value.value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {
            f.name: to_jsonable(getattr(value, f.name))
            for f in dataclasses.fields(value)
            if not (f.metadata.get("omit_default") and getattr(value, f.name) == f.default)
        }
    if isinstance(value, tuple | list):
        return [to_jsonable(v) for v in value]
    return value


def from_jsonable(cls: type[T], data: Any, where: str, error: type[Exception]) -> T:
    """Build dataclass ``cls`` from JSON data; raise ``error`` naming ``where`` and the field."""
    return _convert(cls, data, where, error)


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _convert(tp: Any, value: Any, where: str, error: type[Exception]) -> Any:
    origin = get_origin(tp)
    if origin in (Union, types.UnionType):
        args = get_args(tp)
        if value is None and type(None) in args:
            return None
        (inner,) = [a for a in args if a is not type(None)]
        return _convert(inner, value, where, error)
    if origin is Literal:
        allowed = get_args(tp)
        if value not in allowed:
            raise error(f"{where}: got {value!r}, expected one of {list(allowed)}")
        return value
    if origin is tuple:
        if not isinstance(value, list | tuple):
            raise error(f"{where}: expected a list, got {_kind(value)}")
        (inner, _ellipsis) = get_args(tp)
        return tuple(_convert(inner, v, f"{where}[{i}]", error) for i, v in enumerate(value))
    if isinstance(tp, type) and issubclass(tp, Enum):
        try:
            return tp(value)
        except ValueError:
            raise error(
                f"{where}: got {value!r}, expected one of {[m.value for m in tp]}"
            ) from None
    if dataclasses.is_dataclass(tp):
        return _convert_dataclass(tp, value, where, error)
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise error(f"{where}: expected a number, got {value!r}")
        return float(value)
    if tp in (str, int, bool):
        if not isinstance(value, tp) or (tp is int and isinstance(value, bool)):
            raise error(f"{where}: expected {tp.__name__}, got {value!r}")
        return value
    raise TypeError(f"unsupported field type {tp!r} at {where}")  # a bug in a model, not input


def _convert_dataclass(cls: type, value: Any, where: str, error: type[Exception]) -> Any:
    if not isinstance(value, Mapping):
        raise error(f"{where}: expected a JSON object, got {_kind(value)}")
    hints = _hints(cls)
    fields = dataclasses.fields(cls)
    names = [f.name for f in fields]
    unknown = sorted(set(value) - set(names))
    if unknown:
        raise error(f"{where}: unknown field(s) {unknown}; expected only {names}")
    kwargs = {}
    for f in fields:
        if f.name not in value:
            has_default = (
                f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING
            )
            if has_default:
                continue
            raise error(f"{where}: missing field {f.name!r}")
        kwargs[f.name] = _convert(hints[f.name], value[f.name], f"{where}.{f.name}", error)
    return cls(**kwargs)


def _kind(value: Any) -> str:
    return "null" if value is None else type(value).__name__
