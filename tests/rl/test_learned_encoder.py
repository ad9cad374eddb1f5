"""The learned audio path: log-mel spectrograms, their wrapper and cache, the SB3 extractor, a
short training run with warm start, and the trained model played through the runner."""

import json
import pickle
import warnings

import numpy as np
import pytest

pytest.importorskip("torchaudio")
pytest.importorskip("sb3_contrib")

import torch
from gymnasium.utils.env_checker import check_env as gym_check_env
from stable_baselines3.common.env_checker import check_env as sb3_check_env

from hear2act_agents.rl.audio_encoder import AudioTextExtractor
from hear2act_agents.rl.encoding import EncoderSpec, RLObservation
from hear2act_agents.rl.envs import make_env
from hear2act_agents.rl.policy import load_policy
from hear2act_agents.rl.training import TrainConfig, train, train_env
from hear2act_cli import build_parser
from hear2act_env.env import Hear2ActEnv
from hear2act_env.errors import ConfigError
from hear2act_env.evaluation.rollout import run_episode, wrap_for
from hear2act_env.speech.logmel import HIGH, LOW, LogMelSettings, LogMelTransform
from hear2act_env.wrappers.logmel import LogMelObservation
from hear2act_env.wrappers.structured import StructuredObservation
from tests.rl.stubs import ToneRenderer

SR = 16_000
TINY = {"n_envs": 2, "n_steps": 64, "batch_size": 64, "n_epochs": 1, "eval_episodes": 0}


class CountingRenderer(ToneRenderer):
    """A tone renderer that counts its renders."""

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def render(self, utt):  # noqa: ANN001 - an Utterance
        self.calls += 1
        return super().render(utt)


def tone(seconds: float, f0: float = 150.0, amp: float = 0.2) -> np.ndarray:
    t = np.arange(int(seconds * SR)) / SR
    return (amp * np.sin(2 * np.pi * f0 * t)).astype(np.float32)


def audio_env(renderer=None, **kw):
    return Hear2ActEnv(
        access="A+T", renderer=renderer or ToneRenderer(), audio_cache=False, split="train", **kw
    )


def sb3_check(env):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        sb3_check_env(env, warn=True, skip_render_check=True)
    # 2-D boxes (fit, logmel) are neither images nor vectors: our extractor reads them
    unexpected = [str(w.message) for w in caught if "unconventional shape" not in str(w.message)]
    assert not unexpected, unexpected


# -- the spectrogram ------------------------------------------------------------------------
def test_settings_validate_and_name_the_computation():
    s = LogMelSettings()
    assert s.shape == (32, 200) and 9.9 < s.seconds < 10.1
    assert s.key() != LogMelSettings(n_mels=40).key()
    assert LogMelSettings.from_dict(s.to_dict()) == s and LogMelSettings.from_dict(None) == s
    with pytest.raises(ConfigError, match="logmel n_mels: got 0"):
        LogMelSettings(n_mels=0)
    with pytest.raises(ConfigError, match="f_min/f_max"):
        LogMelSettings(f_max=9000.0)
    with pytest.raises(ConfigError, match="unknown fields"):
        LogMelSettings.from_dict({"n_mel": 3})


def test_spectrogram_shape_bounds_and_what_it_shows():
    transform = LogMelTransform()
    short, long = transform(tone(0.5)), transform(tone(2.0))
    assert short.shape == long.shape == (32, 200) and short.dtype == np.float32
    assert LOW <= long.min() and long.max() <= HIGH
    silence = transform.silence()
    assert np.array_equal(transform(np.zeros(0, np.float32)), silence)

    def voiced(m):
        return int((m > silence + 0.1).any(axis=0).sum())

    assert voiced(long) > 3 * voiced(short) > 0  # duration is visible
    assert transform(tone(1.0, amp=0.4)).mean() > transform(tone(1.0, amp=0.1)).mean()
    low, high = transform(tone(1.0, f0=120.0)), transform(tone(1.0, f0=400.0))
    assert np.argmax(low[:, 5]) < np.argmax(high[:, 5])  # pitch moves energy up the bands
    assert np.array_equal(transform(tone(2.0)), long)  # deterministic
    assert np.array_equal(pickle.loads(pickle.dumps(transform))(tone(2.0)), long)


# -- the wrapper ----------------------------------------------------------------------------
def test_wrapper_passes_both_checkers_and_shows_latest_and_first_turn(tmp_path):
    env = LogMelObservation(
        StructuredObservation(audio_env(), keep_text=True),
        keep_audio=True,
        drop_text=False,
        feature_cache=tmp_path,
    )
    transform = LogMelTransform()
    obs, _ = env.reset(seed=2)
    first = transform(obs["audio"][: obs["audio_length"]])
    assert obs["logmel"].shape == (64, 200)
    assert np.array_equal(obs["logmel"][:32], first) and np.array_equal(obs["logmel"][32:], first)
    obs, *_ = env.step(np.array([0, 0, 3]))
    now = transform(obs["audio"][: obs["audio_length"]])
    assert np.array_equal(obs["logmel"][:32], now) and np.array_equal(obs["logmel"][32:], first)

    plain = LogMelObservation(StructuredObservation(audio_env(), keep_text=True))
    sb3_check(plain)
    with warnings.catch_warnings():  # "the environment is wrapped": it is the point here
        warnings.simplefilter("ignore")
        gym_check_env(LogMelObservation(audio_env(), drop_text=False), skip_render_check=True)
    assert not set(plain.observation_space.spaces) & {"audio", "audio_length", "transcript"}
    one = LogMelObservation(StructuredObservation(audio_env(), keep_text=True), reference=False)
    assert one.observation_space["logmel"].shape == (32, 200)
    with pytest.raises(ConfigError, match="needs an observation with 'audio'"):
        LogMelObservation(Hear2ActEnv(access="T"))


def test_disk_cache_skips_rendering_and_changes_no_observation(tmp_path):
    def episode(renderer, cache):
        env = LogMelObservation(
            StructuredObservation(audio_env(renderer), keep_text=True), feature_cache=cache
        )
        obs, _ = env.reset(seed=5)
        seen = [obs["logmel"]]
        for action in ([0, 0, 1], [0, 0, 2], [2, 4, 0], [1, 0, 0], [3, 0, 0]):
            obs, _, terminated, truncated, _ = env.step(np.array(action))
            seen.append(obs["logmel"])
            if terminated or truncated:
                break
        return seen

    uncached = episode(CountingRenderer(), False)
    first, second = CountingRenderer(), CountingRenderer()
    warm = episode(first, tmp_path)
    again = episode(second, tmp_path)
    assert first.calls > 0 and second.calls == 0  # every clip came from the cache
    for a, b, c in zip(uncached, warm, again, strict=True):
        assert np.array_equal(a, b) and np.array_equal(a, c)
    assert any((tmp_path).rglob("*.h2f"))


def test_learned_stack_is_picklable_and_passes_check_env():
    spec = EncoderSpec.for_access("A+T", audio_encoder="learned", logmel=LogMelSettings().to_dict())
    env = make_env(access="A+T", spec=spec, renderer=ToneRenderer(), audio_cache=False)
    sb3_check(env)
    clone = pickle.loads(pickle.dumps(env))
    a, _ = env.reset(seed=3)
    b, _ = clone.reset(seed=3)
    assert set(a) == {"vector", "logmel"} and a["vector"].shape == (spec.size,)
    assert np.array_equal(a["logmel"], b["logmel"]) and np.array_equal(a["vector"], b["vector"])
    # the vector has no prosody part: it equals the T layout
    assert spec.layout() == EncoderSpec.for_access("T").layout()
    with pytest.raises(ConfigError, match="needs a 'logmel' observation"):
        RLObservation(StructuredObservation(audio_env()), spec)


# -- the extractor --------------------------------------------------------------------------
def test_extractor_puts_the_vector_first_and_subtracts_the_reference():
    spec = EncoderSpec.for_access("A+T", audio_encoder="learned", logmel=LogMelSettings().to_dict())
    env = make_env(access="A+T", spec=spec, renderer=ToneRenderer(), audio_cache=False)
    extractor = AudioTextExtractor(env.observation_space, n_mels=32, embed_dim=16)
    assert extractor.features_dim == spec.size + 32
    obs, _ = env.reset(seed=0)
    batch = {k: torch.as_tensor(v).unsqueeze(0) for k, v in obs.items()}
    out = extractor(batch)
    assert out.shape == (1, spec.size + 32)
    assert torch.equal(out[0, : spec.size], batch["vector"][0])
    # the first turn is its own reference: the difference part is zero
    assert torch.count_nonzero(out[0, spec.size + 16 :]) == 0
    emb = extractor.embed(batch["logmel"][:, :32])
    assert torch.allclose(emb, out[:, spec.size : spec.size + 16])
    with pytest.raises(ValueError, match="not 1 or 2 clips"):
        AudioTextExtractor(env.observation_space, n_mels=30)


# -- training -------------------------------------------------------------------------------
def test_config_rejects_a_learned_encoder_without_audio_and_unknown_names():
    with pytest.raises(ConfigError, match="needs an access condition with audio"):
        TrainConfig(env=train_env(access="T"), audio_encoder="learned")
    with pytest.raises(ConfigError, match="audio_encoder: got 'cnn'"):
        TrainConfig(env=train_env(access="A+T"), audio_encoder="cnn")
    with pytest.raises(ConfigError, match="audio_encoder"):
        EncoderSpec.for_access("T+S", audio_encoder="learned")
    args = build_parser().parse_args(["train", "--access", "A+T", "--audio-encoder", "learned"])
    assert args.audio_encoder == "learned"
    with pytest.raises(SystemExit):
        build_parser().parse_args(["train", "--audio-encoder", "wav2vec"])


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """A tiny T run and a learned A+T run warm-started from it with learning rate 0."""
    root = tmp_path_factory.mktemp("learned")
    text = train(train_env(), 128, 0, root / "T", progress=False, **TINY)
    learned = train(
        train_env(access="A+T", renderer=ToneRenderer()),
        128,
        0,
        root / "learned",
        progress=False,
        vec="dummy",
        audio_encoder="learned",
        init_from=str(text.out_dir),
        learning_rate=0.0,  # no update: the warm-started agent must act as the text agent
        **TINY,
    )
    return text, learned


def test_short_learned_run_warm_starts_from_text_and_plays_through_the_runner(runs):
    text, result = runs
    config = json.loads(result.config_path.read_text())
    assert config["config"]["audio_encoder"] == "learned"
    assert config["encoder"]["logmel"] == LogMelSettings().to_dict()
    learned, source = load_policy(result.out_dir), load_policy(text.out_dir)
    assert isinstance(learned.model.policy.features_extractor, AudioTextExtractor)
    renderer = {"renderer": ToneRenderer(), "audio_cache": False}
    env_a = wrap_for(Hear2ActEnv(access="A+T", split="test", **renderer), learned)
    env_t = wrap_for(Hear2ActEnv(access="T", split="test"), source)
    for seed in range(3):
        a = run_episode(env_a, learned, seed=seed)
        t = run_episode(env_t, source, seed=seed)
        assert a.tally.steps == t.tally.steps and len(a.tally.steps) >= 1
    with pytest.raises(ConfigError, match="trained with audio"):
        run_episode(wrap_for(Hear2ActEnv(access="T"), learned), learned, seed=0)


def test_probe_scores_the_reference_the_control_and_the_run_on_the_same_clips(runs, tmp_path):
    from hear2act_agents.rl.probe import markdown, probe_encoders
    from hear2act_env.scenarios.bank import load_bank
    from hear2act_env.speech.bank_perception import collect_clips
    from hear2act_env.speech.cache import AudioCache

    text, learned = runs
    bank = load_bank()
    train_clips = collect_clips([s for s in bank if s.split == "train"][:24], "prosody", 1.0)
    test_clips = collect_clips([s for s in bank if s.split == "test"][:12], "prosody", 1.0, seed=2)
    cache = AudioCache(tmp_path, disk=False)
    rows = probe_encoders([learned.out_dir], train_clips, test_clips, ToneRenderer(), cache)
    assert [r.dims for r in rows] == [8, 32, 32]
    assert all(r.n_test == len(test_clips) for r in rows)
    # the tone's pitch follows the delivery label: the prosodic features separate it well
    assert rows[0].accuracy.value > 0.8 and rows[0].accuracy.low <= rows[0].accuracy.value
    assert "encoder of learned" in markdown(rows)
    json.dumps([r.to_dict() for r in rows])
    with pytest.raises(ConfigError, match="no learned audio encoder"):
        probe_encoders([text.out_dir], train_clips, test_clips, ToneRenderer(), cache)
