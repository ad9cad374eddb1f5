"""``read_toml``: the one reader of user TOML files (``--config`` run files, ``--prices``)."""

from __future__ import annotations

import os

import pytest

from hear2act_env.errors import ConfigError
from hear2act_env.evaluation.usage import load_prices
from hear2act_env.tomlfile import read_toml


def test_a_table_is_read(tmp_path):
    path = tmp_path / "run.toml"
    path.write_text('agents = ["eager"]\n[settings]\ntemperature = 0.5\n')
    assert read_toml(path, "--config", 1024) == {
        "agents": ["eager"],
        "settings": {"temperature": 0.5},
    }


@pytest.mark.parametrize(
    ("make", "needle"),
    [
        (lambda p: p.write_text("x = [\n"), "is not valid TOML"),
        (lambda p: p.write_bytes(b"x = '\xff'\n"), "is not valid TOML"),
        (lambda p: None, "cannot read"),
        (lambda p: os.mkfifo(p), "is not a regular file; expected a TOML file"),
        (lambda p: p.write_text("# " + "x" * 100 + "\n"), "is larger than 64 bytes"),
        (lambda p: p.mkdir(), "is not a regular file"),
    ],
    ids=["syntax", "not utf-8", "missing", "fifo", "too big", "a folder"],
)
@pytest.mark.parametrize("option", ["--config", "--prices"])
def test_every_failure_is_a_config_error_naming_the_option_and_file(tmp_path, make, needle, option):
    path = tmp_path / "f.toml"
    make(path)
    with pytest.raises(ConfigError, match=rf"^{option}: .*f\.toml") as info:
        read_toml(path, option, 64)
    assert needle in str(info.value)


def test_a_price_file_goes_through_it(tmp_path):
    path = tmp_path / "prices.toml"
    path.write_text('["openai:m"]\nprompt = 1.0\ncompletion = 2.0\n')
    assert load_prices(path)["openai:m"].cost(1_000_000, 1_000_000) == pytest.approx(3.0)
    os.unlink(path)
    os.mkfifo(path)
    with pytest.raises(ConfigError, match="--prices: .* is not a regular file"):
        load_prices(path)
