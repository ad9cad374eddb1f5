"""TransformersTTSRenderer on a tiny randomly initialised VITS model saved to tmp_path."""

import json
import os

import numpy as np
import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
transformers = pytest.importorskip("transformers")

from hear2act_env.errors import ConfigError  # noqa: E402
from hear2act_env.speech.transformers_tts import VITS_DELIVERY_SETTINGS, TransformersTTSRenderer  # noqa: E402
from hear2act_env.speech.utterance import Utterance  # noqa: E402


@pytest.fixture(scope="module")
def tiny_vits(tmp_path_factory):
    import torch
    from transformers import VitsConfig, VitsModel, VitsTokenizer

    folder = tmp_path_factory.mktemp("vits")
    chars = list(" abcdefghijklmnopqrstuvwxyz,.'?!")
    vocab = {"<pad>": 0, "<unk>": 1, **{c: i + 2 for i, c in enumerate(chars)}}
    (folder / "vocab.json").write_text(json.dumps(vocab))
    VitsTokenizer(str(folder / "vocab.json"), phonemize=False, add_blank=True).save_pretrained(
        folder
    )
    config = VitsConfig(
        vocab_size=len(vocab),
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        ffn_dim=32,
        flow_size=16,
        spectrogram_bins=33,
        upsample_initial_channel=16,
        upsample_rates=[4, 4],
        upsample_kernel_sizes=[8, 8],
        resblock_kernel_sizes=[3],
        resblock_dilation_sizes=[[1, 3]],
        prior_encoder_num_flows=1,
        prior_encoder_num_wavenet_layers=1,
        posterior_encoder_num_wavenet_layers=1,
        duration_predictor_num_flows=1,
        duration_predictor_filter_channels=16,
        depth_separable_num_layers=1,
        sampling_rate=22050,
    )
    torch.manual_seed(0)
    VitsModel(config).save_pretrained(folder)
    return folder


def utt(delivery, strength=1.0, variation=0):
    return Utterance("okay, that could work.", delivery, "amber", variation, strength)


def test_renders_16k_float32_deterministically(tiny_vits):
    r = TransformersTTSRenderer(tiny_vits, delivery_settings=VITS_DELIVERY_SETTINGS)
    a, b = r.render(utt("hesitant")), r.render(utt("hesitant"))
    assert a.dtype == np.float32 and a.ndim == 1 and len(a) > 100 and np.abs(a).max() <= 1.0
    assert a.tobytes() == b.tobytes()
    assert r.render(utt("hesitant", variation=1)).tobytes() != a.tobytes()


def test_label_map_changes_delivery_and_strength_zero_neutralizes(tiny_vits):
    r = TransformersTTSRenderer(tiny_vits, delivery_settings=VITS_DELIVERY_SETTINGS)
    assert r.settings_for(utt("hesitant"))["speaking_rate"] == pytest.approx(0.78)
    slow, fast = r.render(utt("hesitant")), r.render(utt("impatient"))
    assert len(slow) > len(fast)  # speaking_rate reaches the model
    n1, n2 = r.render(utt("hesitant", 0.0)), r.render(utt("impatient", 0.0))
    assert n1.tobytes() == n2.tobytes()


def test_rejects_hub_ids_and_unknown_settings(tiny_vits):
    with pytest.raises(ConfigError, match="model_path"):
        TransformersTTSRenderer("facebook/mms-tts-eng")
    with pytest.raises(ConfigError, match="no attribute"):
        TransformersTTSRenderer(tiny_vits, delivery_settings={"warm": {"pitch_shift": 2.0}})


def test_plugs_into_the_env_through_the_cache(tiny_vits, tmp_path):
    from hear2act_env.env import Hear2ActEnv

    env = Hear2ActEnv(
        access="A+T",
        renderer=TransformersTTSRenderer(tiny_vits, delivery_settings=VITS_DELIVERY_SETTINGS),
        audio_cache=tmp_path,
    )
    obs, _ = env.reset(seed=0)
    assert obs["audio_length"] > 0
