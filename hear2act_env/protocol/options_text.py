"""Reading back the env's numbered options text (``Scenario.options_text``): the option names,
the attributes in shown order and each option's values. It sits in the environment package,
beside the text it inverts, because both the LLM agents (``hear2act_agents.llm``) and the play
app (``hear2act_env.listen.play.app``) read it."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

__all__ = ["OptionsInfo", "parse_options"]

_OPTION_LINE = re.compile(r"^\s*(\d+)\.\s")


@dataclass(frozen=True)
class OptionsInfo:
    """What the ``options`` text says: option names and the attributes in shown order."""

    names: tuple[str, ...]
    attributes: tuple[str, ...]
    values: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    @property
    def n_options(self) -> int:
        return len(self.names)

    def attribute_texts(self) -> list[str]:
        """Per attribute, its label followed by the distinct values the options show."""
        return [
            f"{label}: " + ", ".join(dict.fromkeys(self.values.get(label, ())))
            for label in self.attributes
        ]


def _split_option_line(line: str) -> tuple[str, str] | None:
    """(name, description) of ``"N. Name (description)"``; names may hold parentheses, so
    the description is the parenthesized group that closes the line."""
    m = _OPTION_LINE.match(line)
    if not m:
        return None
    body = line.strip()[len(m.group(1)) + 1 :].strip()
    if not body.endswith(")"):
        return None
    depth = 0
    for i in range(len(body) - 1, -1, -1):
        if body[i] == ")":
            depth += 1
        elif body[i] == "(":
            depth -= 1
            if depth == 0:
                return body[:i].strip(), body[i + 1 : -1]
    return None


def parse_options(options_text: str) -> OptionsInfo:
    """Parse the env's numbered options text (``"1. Name (label: value; ...)"`` per line).

    The attributes are the labels of the first option's description, in shown order (every
    option lists the same 8). Lines that do not look like an option are skipped.
    """
    names: list[str] = []
    attributes: list[str] = []
    values: dict[str, list[str]] = {}
    for line in options_text.splitlines():
        parts = _split_option_line(line)
        if parts is None:
            continue
        name, description = parts
        names.append(name)
        for part in description.split("; "):
            label, sep, value = part.partition(": ")
            if not sep:
                continue
            label = label.strip()
            if label not in values:
                values[label] = []
                if len(names) == 1:
                    attributes.append(label)
            values[label].append(value.strip())
    return OptionsInfo(tuple(names), tuple(attributes), {k: tuple(v) for k, v in values.items()})
