"""A learned audio encoder for stable-baselines3: log-mel spectrograms -> an embedding, beside
the structured text features (``hear2act train --audio-encoder learned``).

``LogMelEncoder`` reads one clip's ``(n_mels, frames)`` spectrogram as a sequence over time
with the mel bands as channels: three 1-D convolutions (kernel 5, 5, 3; stride 2; ReLU; 32
channels), an average pool to 8 time cells (so the clip's duration, its pauses and its
end stay visible: the padding is silence), and a linear layer to ``embed_dim`` (ReLU). 1-D
convolutions are about 3x cheaper than 2-D ones of the same depth on a CPU, which is what
makes PPO with it fit on 2 cores.

``AudioTextExtractor`` (an SB3 ``BaseFeaturesExtractor`` over ``Dict(vector, logmel)``, where
``logmel`` holds the latest turn's rows and below them the first turn's) encodes the latest turn ``e(x)`` and the episode's first turn ``e(r)`` with the same encoder and returns
``[vector, e(x), e(x) - e(r)]``: the structured part first, so a text policy's first layer is a
prefix of this one's and ``warm_start`` copies it (the new columns start at zero, so the
warm-started agent begins as exactly the text policy), and the difference removes the
speaker's baseline as ``prosody_delta`` does for the handcrafted features.
"""

from __future__ import annotations

from typing import Any

import torch
from gymnasium import spaces
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor
from torch import nn

__all__ = ["AudioTextExtractor", "LogMelEncoder", "policy_kwargs"]

#: Defaults of the encoder (saved in the model's policy_kwargs).
EMBED_DIM = 32
CHANNELS = 32
TIME_CELLS = 8


class LogMelEncoder(nn.Module):
    """``(batch, n_mels, frames)`` -> ``(batch, embed_dim)``."""

    def __init__(
        self,
        n_mels: int,
        embed_dim: int = EMBED_DIM,
        channels: int = CHANNELS,
        time_cells: int = TIME_CELLS,
    ) -> None:
        super().__init__()
        self.embed_dim = embed_dim
        self.net = nn.Sequential(
            nn.Conv1d(n_mels, channels, 5, stride=2, padding=2),
            nn.ReLU(),
            nn.Conv1d(channels, channels, 5, stride=2, padding=2),
            nn.ReLU(),
            nn.Conv1d(channels, channels, 3, stride=2, padding=1),
            nn.ReLU(),
            nn.AdaptiveAvgPool1d(time_cells),
            nn.Flatten(),
            nn.Linear(channels * time_cells, embed_dim),
            nn.ReLU(),
        )

    def forward(self, logmel: torch.Tensor) -> torch.Tensor:
        return self.net(logmel)


class AudioTextExtractor(BaseFeaturesExtractor):
    """``Dict(vector, logmel)`` -> ``[vector, e(latest), e(latest) - e(first)]``."""

    def __init__(
        self,
        observation_space: spaces.Dict,
        n_mels: int = 32,
        embed_dim: int = EMBED_DIM,
        channels: int = CHANNELS,
        time_cells: int = TIME_CELLS,
    ) -> None:
        vector, logmel = observation_space["vector"], observation_space["logmel"]
        rows = int(logmel.shape[0])
        if rows % n_mels or rows // n_mels not in (1, 2):
            raise ValueError(f"logmel: {rows} rows is not 1 or 2 clips of n_mels={n_mels}")
        n_clips = rows // n_mels
        features = int(vector.shape[0]) + embed_dim * (2 if n_clips == 2 else 1)
        super().__init__(observation_space, features)
        self.n_clips = int(n_clips)
        self.encoder = LogMelEncoder(n_mels, embed_dim, channels, time_cells)

    def embed(self, logmel: torch.Tensor) -> torch.Tensor:
        """The embedding of single clips ``(batch, n_mels, frames)`` (what the probe reads)."""
        return self.encoder(logmel)

    def forward(self, observations: dict[str, torch.Tensor]) -> torch.Tensor:
        clips = observations["logmel"]
        batch, rows, frames = clips.shape
        e = self.encoder(clips.reshape(batch * self.n_clips, rows // self.n_clips, frames))
        e = e.reshape(batch, self.n_clips, -1)
        parts = [observations["vector"], e[:, 0]]
        if self.n_clips == 2:
            parts.append(e[:, 0] - e[:, 1])
        return torch.cat(parts, dim=1)


def policy_kwargs(net_arch: list[int], **encoder: Any) -> dict[str, Any]:
    """``policy_kwargs`` of a ``MultiInputPolicy`` with this extractor (``encoder``: its
    keyword arguments, ``n_mels`` first)."""
    return {
        "net_arch": list(net_arch),
        "features_extractor_class": AudioTextExtractor,
        "features_extractor_kwargs": dict(encoder),
    }
