"""`RestorableConfig`: which RE encoder / decoder variant a `RestorableModel` is.

Torch-free (the pipeline validates configs before any model is built).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from ..config_io import JsonConfig

CONFIG_NAME = "restorable_config.json"


class Pooling(StrEnum):
    """How the encoder turns a passage into ``e_repr`` (RE §3.1)."""

    CLS = "cls"  # eq. 1: W h(y_1) at a prepended learned [CLS] vector
    MEAN = "mean"  # eq. 2: W sum_i h(x_i) / sqrt(T)


class DecoderKind(StrEnum):
    """How the decoder reads ``e_repr`` (RE §3.2-3.3, fig. 2)."""

    INPUT = "input"  # fig. 2(a): e_repr is the first decoder input; no cross-attention at all
    CROSS = "cross"  # fig. 2(b): cross-attention over e_repr as the only key / value
    GATING = "gating"  # fig. 2(c): the gating layer in place of every cross-attention


# Decoders that put e_repr where a d_model vector goes (eq. 3's constraint d_repr = d_model).
DECODERS_NEEDING_D_MODEL = (DecoderKind.INPUT, DecoderKind.CROSS)


@dataclass
class RestorableConfig(JsonConfig):
    """One RE configuration (restorable embeddings, docs/papers.md; table 1's (a)-(d) are
    ``freeze_pretrained`` x ``extra_layers`` in {0, 3})."""

    file_name = CONFIG_NAME  # no annotation: a class attribute, not a dataclass field

    pooling: str = "mean"
    """``cls`` (eq. 1) or ``mean`` (eq. 2)."""
    decoder: str = "gating"
    """``input`` / ``cross`` / ``gating`` (fig. 2 a / b / c)."""
    repr_dim: int | None = None
    """d_repr, the size of e_repr (None = d_model, the paper's 512 = 512). Only the gating
    decoder can read a vector of another size."""
    extra_layers: int = 0
    """Randomly initialised Transformer layers on top of the pretrained encoder (table 1 (c)/(d): 3)."""
    freeze_pretrained: bool = False
    """Freeze the pretrained encoder (table 1 (b)/(d)); new parts and the decoder always train."""
    freeze_encoder_embedding: bool = True
    """With ``freeze_pretrained``: freeze the encoder's token embedding too where the decoder
    or the LM head shares its table (T5, BART with tied embeddings): the encoder then reads
    its own frozen copy of the pretrained table and the decoder keeps training its own (RE
    §4.2: in (b) "only the last projection layer can be updated"). False: the shared table
    trains through the decoder and changes the "frozen" encoder's input embeddings."""

    def __post_init__(self) -> None:
        self.pooling = _choice(Pooling, "pooling", self.pooling)
        self.decoder = _choice(DecoderKind, "decoder", self.decoder)
        if self.repr_dim is not None and (isinstance(self.repr_dim, bool) or not isinstance(self.repr_dim, int)
                                          or self.repr_dim < 1):
            raise ValueError(f"RestorableConfig.repr_dim={self.repr_dim!r}: a positive int or None")
        if isinstance(self.extra_layers, bool) or not isinstance(self.extra_layers, int) or self.extra_layers < 0:
            raise ValueError(f"RestorableConfig.extra_layers={self.extra_layers!r}: an int >= 0")
        for name in ("freeze_pretrained", "freeze_encoder_embedding"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"RestorableConfig.{name}={getattr(self, name)!r}: a bool")

    def resolved_repr_dim(self, d_model: int) -> int:
        """d_repr for a model of hidden size ``d_model``; raises if the decoder cannot read it."""
        d_repr = self.repr_dim or d_model
        if d_repr != d_model and self.decoder in DECODERS_NEEDING_D_MODEL:
            raise ValueError(
                f"RestorableConfig.repr_dim={d_repr} != d_model={d_model}: the {self.decoder!r} decoder puts e_repr "
                "where a d_model vector goes (RE eq. 3); only decoder='gating' reads another size"
            )
        return d_repr


def _choice(kind: type[StrEnum], field: str, value: str) -> str:
    try:
        return kind(value).value
    except ValueError:
        raise ValueError(
            f"RestorableConfig.{field}={value!r}: one of {[member.value for member in kind]}"
        ) from None
