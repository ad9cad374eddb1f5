"""``hear2act scenarios export --format hf --audio``: the perception check's test clips as the
``clips`` config of the bank's dataset folder, loaded back with ``datasets`` and decoded with
``soundfile`` (no torchcodec): every clip is the one the check scores, sample for sample."""

from __future__ import annotations

import io
import json

import datasets
import numpy as np
import pytest
import soundfile
import yaml

from hear2act_cli import main
from hear2act_env.config import DEFAULT_PROSODY_STRENGTH
from hear2act_env.protocol.delivery import STATE_OF_DELIVERY
from hear2act_env.speech.bank_perception import TEST_SEED, collect_clips
from hear2act_env.speech.cache import PCM_SCALE, speak

pytest.importorskip("espeakng_loader")


@pytest.fixture(scope="module")
def bank_file(tmp_path_factory, flights_scenarios):
    """The ten domestic-flights scenarios (8 train, 2 test) as a scenario file."""
    path = tmp_path_factory.mktemp("bank") / "flights.jsonl"
    path.write_text("".join(json.dumps(s.to_dict()) + "\n" for s in flights_scenarios))
    return path


@pytest.fixture(scope="module")
def exported(tmp_path_factory, bank_file):
    """The folders of the export without and with clips, and the cache to load them with."""
    root = tmp_path_factory.mktemp("export")
    plain, audio = root / "plain", root / "audio"
    common = ["scenarios", "export", "--format", "hf", "--scenario-file", str(bank_file)]
    assert main([*common, "--out", str(plain)]) == 0
    assert main([*common, "--out", str(audio), "--audio", "--renderer", "espeak"]) == 0
    return plain, audio, str(root / "cache")


def _expected_clips(scenarios, realizations=("prosody", "explicit"), limit=None):
    """(realization, utterance, resolved, waveform) of the check's test clips, as it hears them."""
    from hear2act_env.speech.renderers import make_renderer

    renderer = make_renderer("espeak")
    test = [s for s in scenarios if s.split == "test"][:limit]
    return [
        (r, utt, resolved, speak(renderer, utt))
        for r in realizations
        for utt, resolved in collect_clips(test, r, DEFAULT_PROSODY_STRENGTH, 6, seed=TEST_SEED)
    ]


def test_clips_are_the_perception_checks_test_clips_sample_for_sample(exported, flights_scenarios):
    _, audio, cache = exported
    clips = datasets.load_dataset(str(audio), "clips", split="test", cache_dir=cache)
    assert isinstance(clips.features["audio"], datasets.Audio)
    rows = clips.cast_column("audio", datasets.Audio(decode=False)).to_list()
    expected = _expected_clips(flights_scenarios)
    assert len(rows) == len(expected) > 0
    domain = flights_scenarios[0].domain
    for row, (realization, utt, resolved, wave) in zip(rows, expected):
        samples, rate = soundfile.read(io.BytesIO(row["audio"]["bytes"]), dtype="int16")
        assert rate == 16_000 and samples.ndim == 1
        assert np.array_equal(samples.astype(np.float32) / np.float32(PCM_SCALE), wave)
        assert row["audio"]["path"] == row["file_name"]
        assert (audio / row["file_name"]).read_bytes() == row["audio"]["bytes"]
        assert row["file_name"].startswith(f"audio/test/{realization}-")
        assert row["scenario"].startswith(domain) and row["domain"] == domain
        assert row["text"] == utt.text and row["voice"] == utt.persona
        assert row["delivery"] == utt.delivery
        assert row["state"] == STATE_OF_DELIVERY[utt.delivery].label
        assert row["label"] == ("resolved" if resolved else "unresolved")
        assert row["realization"] == realization and row["renderer"] == "espeak-ng"
    labels = [r["label"] for r in rows]
    assert labels.count("resolved") == labels.count("unresolved")


def test_metadata_lists_each_wav_file(exported):
    _, audio, cache = exported
    meta = [
        json.loads(line) for line in (audio / "audio/test/metadata.jsonl").read_text().splitlines()
    ]
    rows = datasets.load_dataset(str(audio), "clips", split="test", cache_dir=cache)
    rows = rows.remove_columns("audio").to_list()
    assert [dict(m, file_name="audio/test/" + m["file_name"]) for m in meta] == rows
    wavs = sorted(p.name for p in (audio / "audio/test").glob("*.wav"))
    assert wavs == sorted(m["file_name"] for m in meta)


def test_the_default_config_is_unchanged_by_the_clips(exported):
    plain, audio, cache = exported
    before = datasets.load_dataset(str(plain), cache_dir=cache)
    after = datasets.load_dataset(str(audio), cache_dir=cache)
    assert list(before) == list(after) == ["train", "test"]
    for split in before:
        assert after[split].features == before[split].features
        assert after[split].to_list() == before[split].to_list()
    assert (audio / "data/test.jsonl").read_bytes() == (plain / "data/test.jsonl").read_bytes()


def test_the_card_declares_both_configs(exported):
    plain, audio, _ = exported
    configs = yaml.safe_load((audio / "README.md").read_text().split("---")[1])["configs"]
    assert [c["config_name"] for c in configs] == ["default", "clips"]
    assert configs[1]["data_files"] == [{"split": "test", "path": "data/clips/test.parquet"}]
    plain_configs = yaml.safe_load((plain / "README.md").read_text().split("---")[1])["configs"]
    assert [c["config_name"] for c in plain_configs] == ["default"]
    assert not (plain / "audio").exists()


def test_limit_and_realizations_choose_the_clips(tmp_path):
    from hear2act_env.scenarios.bank import load_bank

    out = tmp_path / "two"
    args = ["scenarios", "export", "--format", "hf", "--out", str(out), "--audio"]
    assert main([*args, "--limit", "2", "--realization", "prosody"]) == 0
    rows = datasets.load_dataset(str(out), "clips", split="test", cache_dir=str(tmp_path / "c"))
    rows = rows.remove_columns("audio").to_list()
    expected = _expected_clips(load_bank(), ("prosody",), limit=2)
    assert [(r["text"], r["realization"]) for r in rows] == [
        (utt.text, "prosody") for _, utt, _, _ in expected
    ]
    assert len({r["scenario"] for r in rows}) == 2
    assert "from the first 2 of 96 test scenarios" in (out / "README.md").read_text()


def test_no_clips_is_refused_before_anything_is_written(tmp_path, bank_file, capsys):
    out = tmp_path / "none"
    args = ["scenarios", "export", "--format", "hf", "--scenario-file", str(bank_file)]
    assert main([*args, "--out", str(out), "--audio", "--limit", "1"]) == 2
    assert "give no clips" in capsys.readouterr().err
    assert [p for p in out.rglob("*") if not p.is_dir()] == []  # its folders were checked


@pytest.mark.parametrize(
    ("extra", "said"),
    [
        (["--format", "jsonl", "--audio"], "--audio: only with --format hf"),
        (["--format", "hf", "--limit", "2"], "--limit: only with --audio"),
        (["--format", "hf", "--renderer", "espeak"], "--renderer: only with --audio"),
    ],
)
def test_clip_flags_need_audio(tmp_path, capsys, extra, said):
    assert main(["scenarios", "export", "--out", str(tmp_path / "o"), *extra]) == 2
    assert said in capsys.readouterr().err


@pytest.mark.slow
def test_the_whole_test_split_gives_every_clip_of_the_check(tmp_path):
    from hear2act_env.scenarios.bank import load_bank

    out = tmp_path / "bank"
    assert main(["scenarios", "export", "--format", "hf", "--out", str(out), "--audio"]) == 0
    rows = datasets.load_dataset(str(out), "clips", split="test", cache_dir=str(tmp_path / "c"))
    rows = rows.remove_columns("audio").to_list()
    expected = _expected_clips(load_bank())
    assert [(r["realization"], r["text"], r["voice"]) for r in rows] == [
        (realization, utt.text, utt.persona) for realization, utt, _, _ in expected
    ]
