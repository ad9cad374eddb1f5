import json

from hear2act_cli import main
from hear2act_env.scenarios.bank import load_bank


def test_list_shows_every_domain(capsys):
    assert main(["scenarios", "list"]) == 0
    out = capsys.readouterr().out
    n = len({s.domain for s in load_bank()})
    assert f"{n} domains, {10 * n} scenarios" in out
    assert "domestic-flights" in out and "Flights_1" in out


def test_show_prints_roles_and_patterns(capsys):
    assert main(["scenarios", "show", "domestic-flights-01"]) == 0
    out = capsys.readouterr().out
    assert "[best       r111]" in out and "[attractive r110]" in out and "L1 on " in out


def test_show_unknown_id(capsys):
    assert main(["scenarios", "show", "nope-01"]) == 2
    assert "no scenario 'nope-01'" in capsys.readouterr().err


def test_validate_good_and_bad_files(tmp_path, capsys, flights_scenarios):
    good = tmp_path / "good.jsonl"
    good.write_text("\n".join(json.dumps(s.to_dict()) for s in flights_scenarios))
    assert main(["scenarios", "validate", str(good)]) == 0
    bad = tmp_path / "bad.jsonl"
    row = flights_scenarios[0].to_dict()
    del row["favored"]
    bad.write_text(json.dumps(row))
    assert main(["scenarios", "validate", str(bad)]) == 2
    assert "bad.jsonl:1" in capsys.readouterr().err


def test_export_jsonl_round_trips(tmp_path):
    out = tmp_path / "bank.jsonl"
    assert main(["scenarios", "export", "--format", "jsonl", "--out", str(out)]) == 0
    assert out.read_bytes().count(b"\n") == len(load_bank())


def test_export_hf_loads_with_datasets(tmp_path):
    import datasets

    assert main(["scenarios", "export", "--format", "hf", "--out", str(tmp_path / "hf")]) == 0
    ds = datasets.load_dataset(str(tmp_path / "hf"), cache_dir=str(tmp_path / "hf-cache"))
    n_test = sum(s.split == "test" for s in load_bank())
    assert ds["test"].num_rows == n_test and ds["train"].num_rows == len(load_bank()) - n_test
    assert len(ds["test"][0]["candidates"]) == 11
