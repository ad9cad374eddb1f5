"""Tiny randomly initialised models built offline for the backend tests.

The tokenizer is a word-level vocabulary with chat (``<|im_start|>``) and audio special tokens
and a ChatML chat template. Its few words include the reply format's pieces, so a random
model's greedy output sometimes parses and sometimes does not: both paths get exercised.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

SPECIAL = [
    "<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|AUDIO|>", "<|audio_bos|>",
    "<|audio_eos|>", "<|IMAGE|>", "<|VIDEO|>", "<|vision_bos|>", "<|vision_eos|>",
]  # fmt: skip
WORDS = [
    "[ACTION:", "ASK]", "RECOMMEND]", "CONFIRM]", "CLARIFY]", "[OPTION:", "[TOPIC:", "OPEN]",
    "1]", "2]", "3]", "option", "price", "rating", "distance", "what", "about", "?", ".",
    "the", "how", "user", "assistant", "system", "resolved", "unresolved", "sounds",
]  # fmt: skip

CHAT_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n"
    "{% if m['content'] is string %}{{ m['content'] }}{% else %}"
    "{% for c in m['content'] %}{% if c['type'] == 'audio' %}"
    "<|audio_bos|><|AUDIO|><|audio_eos|>{% elif c['type'] == 'text' %}{{ c['text'] }}"
    "{% endif %}{% endfor %}{% endif %}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def build_tokenizer():
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {t: i for i, t in enumerate(["[UNK]", *SPECIAL, *WORDS])}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok.decoder = decoders.WordPiece(prefix="##")
    tok.add_special_tokens(SPECIAL)
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        unk_token="[UNK]",
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        additional_special_tokens=SPECIAL,
        chat_template=CHAT_TEMPLATE,
        extra_special_tokens={
            "audio_token": "<|AUDIO|>",
            "audio_bos_token": "<|audio_bos|>",
            "audio_eos_token": "<|audio_eos|>",
            "image_token": "<|IMAGE|>",
            "video_token": "<|VIDEO|>",
            "vision_bos_token": "<|vision_bos|>",
            "vision_eos_token": "<|vision_eos|>",
        },
    )


def _text_config(tok) -> dict:
    return dict(
        vocab_size=len(tok),
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=1,
        max_position_embeddings=4096,
        eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
    )


def build_chat_model(path: Path, seed: int = 0) -> Path:
    """A tiny Qwen2 causal LM with the word-level tokenizer."""
    import torch
    from transformers import AutoModelForCausalLM, Qwen2Config

    tok = build_tokenizer()
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(Qwen2Config(**_text_config(tok)))
    model.save_pretrained(path)
    tok.save_pretrained(path)
    return path


def build_qwen2_audio(path: Path, seed: int = 0) -> Path:
    """A tiny Qwen2-Audio with its processor (Whisper features + the tokenizer)."""
    import torch
    from transformers import (
        Qwen2AudioConfig,
        Qwen2AudioForConditionalGeneration,
        Qwen2AudioProcessor,
        WhisperFeatureExtractor,
    )

    tok = build_tokenizer()
    processor = Qwen2AudioProcessor(
        feature_extractor=WhisperFeatureExtractor(feature_size=128),
        tokenizer=tok,
        chat_template=CHAT_TEMPLATE,
    )
    config = Qwen2AudioConfig(
        audio_config=dict(
            model_type="qwen2_audio_encoder",
            d_model=16,
            encoder_layers=1,
            encoder_attention_heads=2,
            encoder_ffn_dim=32,
            num_mel_bins=128,
            max_source_positions=1500,
        ),
        text_config=dict(model_type="qwen2", **_text_config(tok)),
        audio_token_index=tok.convert_tokens_to_ids("<|AUDIO|>"),
    )
    torch.manual_seed(seed)
    Qwen2AudioForConditionalGeneration(config).save_pretrained(path)
    processor.save_pretrained(path)
    return path


def _thinker_config(tok):
    from transformers import Qwen2_5OmniThinkerConfig

    ids = tok.convert_tokens_to_ids
    return Qwen2_5OmniThinkerConfig(
        audio_config=dict(
            d_model=16,
            encoder_layers=1,
            encoder_attention_heads=2,
            encoder_ffn_dim=32,
            num_mel_bins=128,
            output_dim=16,
        ),
        vision_config=dict(
            depth=1,
            hidden_size=16,
            intermediate_size=32,
            num_heads=2,
            out_hidden_size=16,
            fullatt_block_indexes=[0],
        ),
        text_config=dict(
            **_text_config(tok),
            rope_parameters={
                "rope_type": "default",
                "rope_theta": 10000.0,
                "mrope_section": [1, 1, 2],
            },
        ),
        audio_token_index=ids("<|AUDIO|>"),
        image_token_index=ids("<|IMAGE|>"),
        video_token_index=ids("<|VIDEO|>"),
        audio_start_token_id=ids("<|audio_bos|>"),
        audio_end_token_id=ids("<|audio_eos|>"),
        vision_start_token_id=ids("<|vision_bos|>"),
        vision_end_token_id=ids("<|vision_eos|>"),
        user_token_id=ids("user"),
    )


def _save_omni_processor(path: Path, tok) -> None:
    from transformers import WhisperFeatureExtractor

    fe = WhisperFeatureExtractor(feature_size=128)
    try:  # the full processor needs torchvision (for its video processor) in transformers 5
        from transformers import (
            Qwen2_5OmniProcessor,
            Qwen2VLImageProcessor,
            Qwen2VLVideoProcessor,
        )

        processor = Qwen2_5OmniProcessor(
            image_processor=Qwen2VLImageProcessor(),
            video_processor=Qwen2VLVideoProcessor(),
            feature_extractor=fe,
            tokenizer=tok,
            chat_template=CHAT_TEMPLATE,
        )
        processor.save_pretrained(path)
    except Exception:  # what a checkpoint holds anyway: tokenizer, features, template
        tok.save_pretrained(path)
        fe.save_pretrained(path)
        (path / "chat_template.jinja").write_text(CHAT_TEMPLATE)


def build_omni_thinker(path: Path, seed: int = 0) -> Path:
    """A tiny Qwen2.5-Omni thinker with its processor."""
    import torch
    from transformers import Qwen2_5OmniThinkerForConditionalGeneration

    tok = build_tokenizer()
    torch.manual_seed(seed)
    Qwen2_5OmniThinkerForConditionalGeneration(_thinker_config(tok)).save_pretrained(path)
    _save_omni_processor(path, tok)
    return path


def build_omni_full(path: Path, seed: int = 0) -> Path:
    """A tiny *full* Qwen2.5-Omni checkpoint (thinker only: audio output disabled), whose
    weights carry the ``thinker.`` prefix of the real checkpoints."""
    import torch
    from transformers import Qwen2_5OmniConfig, Qwen2_5OmniForConditionalGeneration

    tok = build_tokenizer()
    config = Qwen2_5OmniConfig(
        thinker_config=_thinker_config(tok).to_dict(), enable_audio_output=False
    )
    torch.manual_seed(seed)
    Qwen2_5OmniForConditionalGeneration(config).save_pretrained(path)
    _save_omni_processor(path, tok)
    return path


def build_affect_model(path: Path, seed: int = 0) -> Path:
    """A tiny wav2vec2 emotion classifier (classes neu, hap, ang, sad)."""
    import torch
    from transformers import (
        Wav2Vec2Config,
        Wav2Vec2FeatureExtractor,
        Wav2Vec2ForSequenceClassification,
    )

    labels = ["neu", "hap", "ang", "sad"]
    config = Wav2Vec2Config(
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        conv_dim=(16, 16),
        conv_stride=(5, 4),
        conv_kernel=(10, 8),
        num_conv_pos_embeddings=16,
        num_conv_pos_embedding_groups=2,
        classifier_proj_size=8,
        num_labels=len(labels),
        id2label=dict(enumerate(labels)),
        label2id={label: i for i, label in enumerate(labels)},
    )
    torch.manual_seed(seed)
    Wav2Vec2ForSequenceClassification(config).save_pretrained(path)
    Wav2Vec2FeatureExtractor(sampling_rate=16_000, return_attention_mask=True).save_pretrained(path)
    return path


def tone(seconds: float = 0.8, freq: float = 180.0, seed: int = 0) -> np.ndarray:
    """A voiced-ish test signal: a tone with harmonics and a little noise, float32 16 kHz."""
    rng = np.random.default_rng(seed)
    t = np.arange(int(seconds * 16_000)) / 16_000
    x = sum(np.sin(2 * np.pi * freq * k * t) / k for k in (1, 2, 3))
    return (0.3 * x + 0.01 * rng.standard_normal(t.size)).astype(np.float32)
