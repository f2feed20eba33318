"""`BottleneckConfig`: how a single-vector baseline reads its one vector."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from ..config_io import JsonConfig

CONFIG_NAME = "bottleneck_config.json"


class DecoderKind(StrEnum):
    CROSS = "cross"  # RE fig. 2(b) / TSDAE: cross-attention over one key/value
    GATING = "gating"  # RE fig. 2(c): the gating layer in place of cross-attention


@dataclass
class BottleneckConfig(JsonConfig):
    """A single-vector encoder-decoder (TSDAE; RE, Kim et al., ``restorable-embeddings``).

    The encoder's last hidden states are mean-pooled over real tokens into one vector
    ``e_repr`` (TSDAE's best pooling, Nugget footnote 3); the decoder reads only it.
    """

    file_name = CONFIG_NAME  # no annotation: a class attribute, not a dataclass field

    decoder: str = "cross"
    """``cross``: plain cross-attention over the one vector; ``gating``: RE gating layer."""
    repr_dim: int | None = None
    """d_repr of the gating layer (None = the model's hidden size; RE §3.3 uses d_model)."""

    def __post_init__(self) -> None:
        self.decoder = DecoderKind(self.decoder).value
        if self.repr_dim is not None and self.repr_dim < 1:
            raise ValueError(f"repr_dim={self.repr_dim!r} must be positive")
