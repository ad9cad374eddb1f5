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


@pytest.mark.parametrize(
    "nest", ["x = " + "[" * 600 + "]" * 600, "x = " + "{a=" * 600 + "1" + "}" * 600]
)
@pytest.mark.parametrize("option", ["--config", "--prices"])
def test_toml_nested_hundreds_of_levels_is_a_named_error_not_a_recursion(tmp_path, nest, option):
    path = tmp_path / "deep.toml"
    path.write_text(nest + "\n")
    with pytest.raises(ConfigError, match=rf"^{option}: .*deep\.toml nests .* too deeply"):
        read_toml(path, option, 1 << 20)


@pytest.mark.parametrize("option", ["--config", "--prices"])
def test_deep_toml_through_the_command_line_is_one_line_and_exit_2(tmp_path, capsys, option):
    from hear2act_cli import main

    path = tmp_path / "deep.toml"
    path.write_text("x = " + "[" * 800 + "]" * 800 + "\n")
    argv = ["eval", "--agents", "eager", option, str(path), "--out", str(tmp_path / "o")]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.strip().count("\n") == 0 and "too deeply" in err


@pytest.mark.parametrize("option", ["--config", "--prices"])
def test_an_integer_of_5000_digits_is_a_named_error(tmp_path, option):
    path = tmp_path / "big.toml"
    path.write_text("x = " + "1" * 5000 + "\n")
    with pytest.raises(ConfigError, match=rf"^{option}: .*big\.toml holds a value it cannot read"):
        read_toml(path, option, 1 << 20)
