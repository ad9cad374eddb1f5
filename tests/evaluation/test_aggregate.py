"""``aggregate.json`` (every figure, its CI and n, each row's configuration and hash) and the
latency summary (median and p95 seconds per uncached model call), on hand-built records and
logs whose every figure is known, and on a real eval run."""

from __future__ import annotations

import csv
import json

import pytest

from hear2act_cli import main
from hear2act_env.evaluation.agent_logs import log_line, log_path
from hear2act_env.evaluation.identity import config_hash, configuration
from hear2act_env.evaluation.latency import latency_of, read_latencies
from hear2act_env.evaluation.records import EpisodeKey, EpisodeRecord
from hear2act_env.evaluation.report import report
from hear2act_env.scenarios.bank import load_bank

FIRST = [s.id for s in load_bank() if s.split == "test"][:2]


def _record(scenario, *, run=0, success=True, error=None, calls=2):
    key = EpisodeKey("openai:m", "prosody", "T", "correct", scenario, run)
    stats = {"calls": calls, "prompt_tokens": 100, "completion_tokens": 10}
    return EpisodeRecord(
        key=key,
        seed=key.seed,
        success=success,
        actions=3,
        agent_stats=stats,
        error=error,
        error_kind="infrastructure" if error else None,
    )


def _log(record, seconds, cached=()):
    calls = [{"latency_s": s, "cached": i in cached, "usage": {}} for i, s in enumerate(seconds)]
    return log_line(record, {"prompts": {}, "turns": [{"calls": calls}]})


def test_latency_is_the_median_and_p95_of_uncached_calls_of_finished_episodes(tmp_path):
    results = tmp_path / "results.jsonl"
    a, b, c = _record("s1"), _record("s2"), _record("s3", error="InfrastructureError: x")
    results.write_text("".join(r.to_json() + "\n" for r in (a, b, c)))
    lines = [
        _log(a, [1.0, 2.0, 0.001], cached={2}),  # the cached call is left out
        _log(b, [3.0, 4.0]),
        _log(c, [100.0]),  # an errored episode: left out like its record
    ]
    log_path(results).write_text("\n".join(lines) + "\n")
    (found,) = read_latencies([results]).values()
    assert found.calls == 4
    assert found.p50 == pytest.approx(2.5)
    assert found.p95 == pytest.approx(3.0 + 0.85 * 1.0)  # linear between the 3rd and 4th
    assert latency_of([]) is None
    text = report([a, b, c], tmp_path / "r", plots=False, latencies=read_latencies([results]))
    assert "p50 s" in text and "2.50" in text and "3.85" in text
    row = next(csv.DictReader((tmp_path / "r" / "usage.csv").open()))
    assert row["latency_calls"] == "4" and float(row["latency_p95_s"]) == pytest.approx(3.85)


def test_the_aggregate_holds_every_figure_of_the_csv_files(tmp_path):
    records = [_record("s1"), _record("s2", success=False), _record("s1", run=1)]
    records.append(_record("s2", run=1))
    report(records, tmp_path, plots=False)
    data = json.loads((tmp_path / "aggregate.json").read_text())
    assert data["format"] == "hear2act-aggregate/1" and data["episodes"] == 4
    (cell,) = data["cells"]
    assert (cell["scenarios"], cell["runs"], cell["episodes"]) == (2, 2, 4)
    assert cell["config_hash"] is None  # no configuration given
    for line in csv.DictReader((tmp_path / "conditions.csv").open()):
        got = cell["metrics"][line["metric"]]
        if line["value"] == "nan":  # not defined (no such turn): null in JSON
            assert got["value"] is None
            continue
        assert got["value"] == pytest.approx(float(line["value"]), abs=1e-4)
        assert got["ci_low"] == pytest.approx(float(line["ci_low"]), abs=1e-4)
        assert got["n"] == 2  # scenarios
    assert cell["metrics"]["success"]["value"] == pytest.approx(75.0)
    curve = data["pass_k"][0]["curve"]
    assert [p["k"] for p in curve] == [1, 2]
    assert curve[1]["pass_all"]["value"] == pytest.approx(50.0)  # s1 passed both runs
    assert curve[1]["pass_any"]["value"] == pytest.approx(100.0)
    (usage,) = data["usage"]
    assert usage["calls"] == 8 and usage["prompt_tokens"] == 400 and usage["latency_s"] is None


def test_an_eval_run_writes_its_aggregate_with_its_configuration(tmp_path, capsys):
    out = tmp_path / "run"
    argv = ["eval", "--agents", "prober", "--scenarios", *FIRST, "--access", "T", "T+S"]
    argv += ["--realizations", "prosody", "--out", str(out), "--no-plots", "--backend", "serial"]
    assert main(argv) == 0
    capsys.readouterr()
    data = json.loads((out / "aggregate.json").read_text())
    man = json.loads((out / "results.manifest.json").read_text())
    digest = config_hash(configuration(man["config"]))
    assert data["configurations"]["prober"]["hash"] == digest
    assert data["bank"] == {"version": man["bank_version"], "sha256": man["bank_sha256"]}
    assert {c["condition"] for c in data["cells"]} == {"T", "T+S"}
    assert all(c["config_hash"] == digest and c["scenarios"] == 2 for c in data["cells"])
    assert [d["condition"] for d in data["differences"]] == ["T+S - T"]
    # report on the folder writes the same figures
    assert (
        main(["report", str(out / "results.jsonl"), "--no-plots", "--out", str(tmp_path / "r")])
        == 0
    )
    again = json.loads((tmp_path / "r" / "aggregate.json").read_text())
    assert again == data


@pytest.mark.parametrize("bad", ["NaN", "Infinity", "-1.0", '"slow"'])
def test_a_log_line_with_a_latency_no_call_has_is_skipped_not_counted(tmp_path, bad):
    results = tmp_path / "results.jsonl"
    a, b = _record("s1"), _record("s2")
    results.write_text(a.to_json() + "\n" + b.to_json() + "\n")
    hostile = _log(a, [1.0]).replace('"latency_s": 1.0', f'"latency_s": {bad}')
    assert bad in hostile
    log_path(results).write_text(hostile + "\n" + _log(b, [2.0, 4.0]) + "\n")
    with pytest.warns(UserWarning, match="corrupt log line"):
        (found,) = read_latencies([results]).values()
    assert (found.calls, found.p50) == (2, 3.0)
    report([a, b], tmp_path / "r", plots=False, latencies={("openai:m", "prosody", "T"): found})
    json.loads((tmp_path / "r" / "aggregate.json").read_text())  # finite, standard JSON


def test_a_manifest_with_a_number_json_cannot_hold_still_reports(tmp_path, capsys):
    out = tmp_path / "run"
    argv = ["eval", "--agents", "prober", "--scenarios", *FIRST[:1], "--access", "T"]
    argv += ["--realizations", "prosody", "--out", str(out), "--no-plots", "--backend", "serial"]
    assert main(argv) == 0
    man = out / "results.manifest.json"
    data = json.loads(man.read_text())
    data["config"]["agent_options"] = {"temperature": float("nan")}
    man.write_text(json.dumps(data))  # writes NaN, which json.loads reads back
    capsys.readouterr()
    assert (
        main(["report", str(out / "results.jsonl"), "--no-plots", "--out", str(tmp_path / "r")])
        == 0
    )
    written = json.loads((tmp_path / "r" / "aggregate.json").read_text())
    assert written["configurations"]["prober"]["config"]["agent_options.temperature"] is None
