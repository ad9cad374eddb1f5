import json

from hear2act_cli import main
from hear2act_env.evaluation.runner import load_records
from hear2act_env.scenarios.bank import load_bank


def test_benchmark_then_report(tmp_path, capsys):
    out = tmp_path / "bm"
    # a small benchmark through the same command: the first four test-split scenarios of the
    # bank and two train-split ones (which --split test leaves out); the whole test split
    # (96 scenarios, 3,456 episodes) took about 17 s
    bank = load_bank()
    test = [s for s in bank if s.split == "test"][:4]
    picked = test + [s for s in bank if s.split == "train"][:2]
    scenario_file = tmp_path / "few.jsonl"
    scenario_file.write_text("".join(json.dumps(s.to_dict()) + "\n" for s in picked))
    assert (
        main(
            [
                "benchmark",
                "--out",
                str(out),
                "--scenario-file",
                str(scenario_file),
                "--split",
                "test",
                "--agents",
                "eager",
                "state-aware",
                "prober",
                "--backend",
                "serial",
            ]
        )
        == 0
    )
    text = capsys.readouterr().out
    assert (
        "Success / Accept / FullFit" in text
        and "Paired differences against T" in text
        and "State fidelity" in text
    )
    records = load_records(out / "results.jsonl")
    assert len(records) == 3 * 2 * 6 * 4
    assert {r.key.scenario for r in records} == {s.id for s in test}
    for name in (
        "conditions.csv",
        "differences.csv",
        "success_by_condition.png",
        "action_composition.png",
        "state_fidelity.png",
    ):
        assert (out / name).stat().st_size > 0, name
    assert main(["report", str(out / "results.jsonl"), "--no-plots"]) == 0
    assert "state-aware" in capsys.readouterr().out


def test_report_on_empty_file(tmp_path, capsys):
    path = tmp_path / "empty.jsonl"
    path.write_text("")
    assert main(["report", str(path)]) == 2
    assert "no records" in capsys.readouterr().err


def test_text_table_keeps_columns_aligned_for_long_agent_names():
    from hear2act_env.evaluation.report import Row, format_table
    from hear2act_env.evaluation.stats import Estimate

    est = Estimate(50.0, 40.0, 60.0, 10)
    rows = [
        Row("prober", "prosody", "T", 96, 0, {"success": est}),
        Row("ppo:agents/rl/models/prosody-A+T-c0.05", "prosody", "A+T", 96, 0, {"success": est}),
    ]
    lines = format_table(rows, ["success"], "title").splitlines()
    starts = {line.index("prosody ") for line in lines[3:]}  # the realization column
    assert len(starts) == 1 and lines[2].startswith("-")
    assert lines[1].index("realization") == starts.pop()
