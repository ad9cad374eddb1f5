"""``setting_text.setting_value``: the one rule that reads a ``--setting`` value."""

from __future__ import annotations

import pytest

from hear2act_env.setting_text import MAX_DEPTH, setting_value


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("64", 64),
        ("0.5", 0.5),
        ("true", True),
        ('["END", "\\n"]', ["END", "\n"]),
        (
            '{"chat_template_kwargs": {"enable_thinking": false}}',
            {"chat_template_kwargs": {"enable_thinking": False}},
        ),
        ("{ enable_thinking = false }", {"enable_thinking": False}),  # a TOML inline table
        ("'END'", "END"),  # a TOML literal string
        ('"64"', "64"),  # quoted: a string that looks like a number
        ("cuda", "cuda"),  # bare words are strings
        ("Qwen/Qwen3-8B", "Qwen/Qwen3-8B"),
        ("http://127.0.0.1:8000/v1", "http://127.0.0.1:8000/v1"),
        ("", ""),
    ],
)
def test_a_value_reads_as_json_then_toml_then_text(text, value):
    got = setting_value(text)
    assert got == value and type(got) is type(value)


@pytest.mark.parametrize(
    "text",
    [
        "null",  # no null in a run file
        "nan",
        "inf",
        "1e400",  # not finite
        "2024-01-01",
        "12:00:00",
        "{ a = 1979-05-27 }",  # dates are not JSON data
        "1\nw = 2",  # several values
        "[" * (MAX_DEPTH + 5) + "1" + "]" * (MAX_DEPTH + 5),
    ],
)
def test_what_a_run_file_cannot_hold_stays_text(text):
    assert setting_value(text) == text
