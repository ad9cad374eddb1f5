"""Files read from disk are data, and outputs are checked before work: a JSON value nested
50,000 deep is a skipped line or a named error (never a ``RecursionError``); an unwritable
output is a one-line error (exit 2) before the command starts its work; ``render`` exits 3 when
some clips could not be cached."""

from __future__ import annotations

import os
import signal
import sys
import types
import warnings
from pathlib import Path

import numpy as np
import pytest

from hear2act_cli import main
from hear2act_env.errors import ConfigError, DomainError, ScenarioError
from hear2act_env.evaluation.records import EpisodeKey, EpisodeRecord

DEEP = "[" * 50_000 + "]" * 50_000
DEEP_OBJECT = '{"a":' * 50_000 + "1" + "}" * 50_000


def _record(run: int = 0) -> EpisodeRecord:
    key = EpisodeKey("eager", "prosody", "T", "correct", "city-hotels-01", run)
    return EpisodeRecord(key=key, seed=key.seed, success=True, actions=2, reward=0.5)


# --- deep JSON ------------------------------------------------------------------------------


@pytest.mark.parametrize("deep", [DEEP, DEEP_OBJECT])
def test_a_deep_line_is_not_a_record(deep):
    with pytest.raises(ValueError):
        EpisodeRecord.from_json(deep)


def test_load_records_skips_a_deep_line_like_a_corrupt_one(tmp_path):
    from hear2act_env.evaluation.runner import load_records

    path = tmp_path / "results.jsonl"
    path.write_text("\n".join([_record(0).to_json(), DEEP, _record(1).to_json()]) + "\n")
    with pytest.warns(UserWarning, match=r"results.jsonl:2: skipped a corrupt record"):
        records = load_records(path)
    assert sorted(r.key.run for r in records) == [0, 1]


def test_report_reads_a_results_file_with_a_deep_line(tmp_path, capsys):
    path = tmp_path / "results.jsonl"
    path.write_text("\n".join([_record(0).to_json(), DEEP, _record(1).to_json()]) + "\n")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rc = main(["report", str(path), "--out", str(tmp_path / "report")])
    assert rc == 0, capsys.readouterr().err


def test_agent_logs_skip_a_deep_line(tmp_path):
    from hear2act_env.evaluation.agent_logs import load_agent_logs, log_line

    results = tmp_path / "results.jsonl"
    good = log_line(_record(0), {"prompts": {}, "turns": []})
    (tmp_path / "results.log.jsonl").write_text("\n".join([DEEP_OBJECT, good, DEEP]) + "\n")
    with pytest.warns(UserWarning, match="skipped a corrupt log line"):
        logs = load_agent_logs(results)
    assert list(logs) == [_record(0).key.id()]


class _Hang(BaseException):
    """Raised by the alarm (a BaseException: no ``except OSError`` swallows it)."""


@pytest.mark.skipif(not hasattr(signal, "setitimer"), reason="POSIX only")
def test_a_results_file_that_is_not_a_regular_file_is_a_named_error(tmp_path):
    from hear2act_env.evaluation.runner import load_records

    def fire(signum, frame):  # noqa: ANN001
        raise _Hang("load_records blocked on a FIFO")

    fifo = tmp_path / "results.jsonl"
    os.mkfifo(fifo)
    previous = signal.signal(signal.SIGALRM, fire)
    signal.setitimer(signal.ITIMER_REAL, 5)
    try:
        with pytest.raises(ConfigError, match="not a regular file"):
            load_records(fifo)  # never blocks waiting for a writer
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@pytest.mark.parametrize("suffix", [".jsonl", ".json"])
def test_a_deep_scenario_file_is_a_scenario_error(tmp_path, suffix):
    from hear2act_env.scenarios.bank import load_scenarios

    path = tmp_path / f"s{suffix}"
    path.write_text(DEEP + "\n")
    with pytest.raises(ScenarioError, match="nested too deeply"):
        load_scenarios(path)
    path.write_text("[" * 100 + "]" * 100 + "\n")  # parses, but deeper than any scenario
    with pytest.raises(ScenarioError, match="nested too deeply"):
        load_scenarios(path)


def test_a_deep_domain_file_is_a_domain_error(tmp_path):
    from hear2act_env.scenarios.domain import load_domain

    path = tmp_path / "d.json"
    path.write_text(DEEP_OBJECT)
    with pytest.raises(DomainError, match="d.json"):
        load_domain(path)


def test_a_deep_perceiver_file_is_a_value_error(tmp_path, capsys):
    from hear2act_env.speech.perception import LogisticModel

    path = tmp_path / "perceiver.json"
    path.write_text(DEEP_OBJECT)
    with pytest.raises(
        ConfigError, match="perceiver.json: not a hear2act logistic model .JSONDepthError"
    ):
        LogisticModel.load(path)
    path.write_text("[1, 2]")
    with pytest.raises(ConfigError, match="not a hear2act logistic model"):
        LogisticModel.load(path)


def test_a_deep_llm_cache_entry_is_a_miss(tmp_path):
    from hear2act_agents.llm.cache import ResponseCache

    cache = ResponseCache(tmp_path)
    key = "cd" + "1" * 62
    cache.put(key, "hello")
    assert cache.get(key) == "hello"
    (tmp_path / key[:2] / f"{key}.json").write_text(DEEP_OBJECT)
    assert cache.lookup(key) is None and cache.misses == 1


def test_a_deep_rl_run_config_is_a_config_error(tmp_path):
    from hear2act_agents.rl.evaluation import training_scenarios

    config = tmp_path / "config.json"
    config.write_text(DEEP_OBJECT)
    with pytest.raises(ConfigError, match="config.json"):
        training_scenarios(config)


def test_the_shipped_data_loads_as_before():
    import gymnasium as gym

    import hear2act_env  # noqa: F401 - registers the ids
    from hear2act_env.scenarios.bank import load_bank
    from hear2act_env.scenarios.quality import sgd_index

    assert len(load_bank()) > 100 and sgd_index()
    gym.make("Hear2Act-Prosody-v0").close()


# --- unwritable outputs ----------------------------------------------------------------------


@pytest.fixture
def blocker(tmp_path) -> Path:
    """A regular file: no folder can be made under it."""
    path = tmp_path / "a-file"
    path.write_text("x")
    return path


def _one_line_error(capsys, argv: list[str], *needles: str) -> None:
    rc = main(argv)
    captured = capsys.readouterr()
    err = captured.err.strip()
    assert rc == 2, (argv, rc, err)
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert err.startswith("hear2act: error: ") and all(n in err for n in needles), err
    assert captured.out == "", "work started before the output was checked"


def test_demo_save_audio_unwritable(capsys, blocker):
    _one_line_error(capsys, ["demo", "--save-audio", str(blocker / "wavs")], "--save-audio")
    _one_line_error(capsys, ["demo", "--save-audio", str(blocker)], "--save-audio", str(blocker))


@pytest.mark.parametrize("fmt", ["jsonl", "hf"])
def test_scenarios_export_unwritable(capsys, blocker, tmp_path, fmt):
    target = blocker / "sub" / "out"
    _one_line_error(capsys, ["scenarios", "export", "--format", fmt, "--out", str(target)], "--out")
    if fmt == "jsonl":  # an existing folder is not a file
        _one_line_error(capsys, ["scenarios", "export", "--out", str(tmp_path)], str(tmp_path))
    else:  # a folder where the card goes
        (tmp_path / "hf" / "README.md").mkdir(parents=True)
        _one_line_error(
            capsys,
            ["scenarios", "export", "--format", "hf", "--out", str(tmp_path / "hf")],
            "README.md",
        )


def test_perceive_outputs_unwritable(capsys, blocker, tmp_path):
    _one_line_error(
        capsys, ["perceive", "--save-perceiver", str(blocker / "p.json")], "--save-perceiver"
    )
    _one_line_error(
        capsys, ["perceive", "--save-perceiver", str(tmp_path)], "--save-perceiver", "is a folder"
    )
    _one_line_error(capsys, ["perceive", "--ablation", "--json", str(blocker / "a.json")], "--json")


def test_an_unwritable_proc_path_is_refused(capsys):
    if not Path("/proc/self").exists():
        pytest.skip("no /proc")
    _one_line_error(
        capsys, ["perceive", "--save-perceiver", "/proc/hear2act-no/p.json"], "--save-perceiver"
    )


# --- render's exit status ------------------------------------------------------------------


class _Tone:
    name = "test-data-tone"
    version = "1"
    sample_rate = 16_000
    fail_after: int | None = None

    def render(self, utt) -> np.ndarray:  # noqa: ANN001
        if _Tone.fail_after is not None:
            if _Tone.fail_after == 0:
                from hear2act_env.interrupts import Interrupted

                raise Interrupted("stopped by SIGINT")
            _Tone.fail_after -= 1
        t = np.arange(800, dtype=np.float32) / self.sample_rate
        return (0.2 * np.sin(2 * np.pi * (150 + len(utt.text)) * t)).astype(np.float32)


@pytest.fixture
def tone(monkeypatch) -> str:
    module = types.ModuleType("h2a_test_tone")
    module.Tone = _Tone
    monkeypatch.setitem(sys.modules, "h2a_test_tone", module)
    monkeypatch.setattr(_Tone, "fail_after", None)
    return "h2a_test_tone:Tone"


def _render_args(cache: Path, spec: str) -> list[str]:
    return [
        "render", "--limit", "1", "--split", "test", "--realizations", "explicit",
        "--audio-cache", str(cache), "--workers", "1", "--renderer", spec,
    ]  # fmt: skip


def _utterance_keys(spec: str) -> list[str]:
    from hear2act_env.scenarios.bank import load_bank
    from hear2act_env.speech.cache import cache_key
    from hear2act_env.speech.prerender import utterances

    scenarios = [s for s in load_bank() if s.split == "test"][:1]
    return [cache_key(_Tone(), u) for u in utterances(scenarios, ["explicit"], 1.0)]


def test_render_exits_3_when_clips_are_not_cached(tmp_path, tone, capsys):
    from hear2act_env.speech.cache import AudioCache

    cache = AudioCache(tmp_path / "cache")
    keys = _utterance_keys(tone)
    for key in keys[:3]:  # folders hold three entries' places
        cache.path_for(key).mkdir(parents=True)
    assert main(_render_args(cache.root, tone)) == 3
    err = capsys.readouterr().err
    assert f"3 of {len(keys)} clips are not in the cache" in err and "3 blocked" in err
    for key in keys[:3]:
        cache.path_for(key).rmdir()
    assert main(_render_args(cache.root, tone)) == 0  # renders the three; all cached now
    assert main(_render_args(cache.root, tone)) == 0  # nothing new to render
    assert "(0 newly rendered)" in capsys.readouterr().out


def test_render_with_an_unwritable_cache_dir_stops_before_work(blocker, tone, capsys):
    _one_line_error(capsys, _render_args(blocker / "cache", tone), "--audio-cache")


def test_an_interrupted_render_leaves_only_whole_entries(tmp_path, tone, capsys):
    from hear2act_env.speech.cache import AudioCache

    _Tone.fail_after = 5
    rc = main(_render_args(tmp_path / "cache", tone))
    err = capsys.readouterr().err
    assert rc in (2, 130) and "Traceback" not in err  # 130 once the CLI maps Interrupted
    cache = AudioCache(tmp_path / "cache")
    files = [p for p in cache.root.rglob("*") if p.is_file()]
    assert len(files) == 5 and all(p.suffix == ".h2a" for p in files)  # no temporary files
    assert all(cache.entry_problem(p.stem, _Tone.sample_rate) is None for p in files)
