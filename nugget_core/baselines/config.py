"""`BottleneckConfig`: how a single-vector baseline reads its one vector."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

CONFIG_NAME = "bottleneck_config.json"


class DecoderKind(StrEnum):
    CROSS = "cross"  # RE fig. 2(b) / TSDAE: cross-attention over one key/value
    GATING = "gating"  # RE fig. 2(c): the gating layer in place of cross-attention


@dataclass
class BottleneckConfig:
    """A single-vector encoder-decoder (TSDAE; RE, Kim et al., ``restorable-embeddings``).

    The encoder's last hidden states are mean-pooled over real tokens into one vector
    ``e_repr`` (TSDAE's best pooling, Nugget footnote 3); the decoder reads only it.
    """

    decoder: str = "cross"
    """``cross``: plain cross-attention over the one vector; ``gating``: RE gating layer."""
    repr_dim: int | None = None
    """d_repr of the gating layer (None = the model's hidden size; RE §3.3 uses d_model)."""

    def __post_init__(self) -> None:
        self.decoder = DecoderKind(self.decoder).value
        if self.repr_dim is not None and self.repr_dim < 1:
            raise ValueError(f"repr_dim={self.repr_dim!r} must be positive")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def save(self, directory: str | Path) -> Path:
        path = Path(directory) / CONFIG_NAME
        path.write_text(json.dumps(self.to_dict(), indent=2) + "\n")
        return path

    @classmethod
    def load(cls, directory: str | Path) -> BottleneckConfig:
        return cls(**json.loads((Path(directory) / CONFIG_NAME).read_text()))
