"""`Nugget2DConfig`: every knob of Nugget2D, validated at construction.

Nugget2D (Qin, Van Durme et al., "Dynamic Contextual Compression for Scaling
Decoder-only Language Models", arXiv:2310.02409) keeps the key/value states of a few
selected tokens ("nuggets") at *every* layer of a decoder-only LM. It has two modes:

- compressor (paper 2.4): a LoRA adapter phi encodes a document, ``k = ceil(r * n)``
  tokens are kept (always the last one), and the LM with adapter theta decodes a prompt
  and an answer attending to the nugget KVs;
- autoregressive (paper 2.5): a token becomes a nugget when its score exceeds
  ``threshold`` (Lambda); tokens older than ``recent_window`` (omega_r) are seen only
  through nuggets, optionally only those within ``distant_window`` (omega_d) and at most
  ``max_nuggets`` of them.

The scorer and the residual are shared with the encoder-decoder Nugget
(`nugget_core.scorer`, `nugget_core.residual`): `scorer_config` builds the
`NuggetConfig` for that shared scorer.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from ..config_io import JsonConfig
from ..modes import ResidualMode, SelectorKind
from ..modes import enum_value as _enum_value
from ..nugget.config import NuggetConfig

CONFIG_NAME = "nugget2d_config.json"
COMPRESSOR = "compressor"  # adapter phi
DECODER = "decoder"  # adapter theta


class TrainingPass(StrEnum):
    """How `Nugget2DModel.forward` (the compressor objectives' loss) runs the LM."""

    JOINT = "joint"  # one forward over document + decoder tokens (`nugget2d.joint`)
    TWO_PASS = "two_pass"  # compress (phi, KV cache), then decode (theta) on the gathered nuggets


def _positive_int_or_none(name: str, value: Any) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"Nugget2DConfig.{name}={value!r} must be a positive int or None")


@dataclass
class Nugget2DConfig(JsonConfig):
    """Configuration of a Nugget2D model (see module docstring for the paper)."""

    file_name = CONFIG_NAME  # no annotation: a class attribute, not a dataclass field

    ratio: float = field(
        default=0.1,
        metadata={
            "help": "compressor ratio r in (0, 1]: k = ceil(r * n) nuggets",
            "gt": 0.0,
            "le": 1.0,
        },
    )
    scorer_layer: int = field(
        default=3,
        metadata={
            "help": "layer l of the frozen LM whose states the scorer reads; 0 = embeddings",
            "ge": 0,
        },
    )
    residual: ResidualMode = field(
        default=ResidualMode.STRAIGHT_THROUGH,
        metadata={"help": "straight_through | direct | none (scores on nugget attention logits)"},
    )
    scale_residual: bool = field(
        default=True,
        metadata={"help": "eq. 5: (q k^T + s) / sqrt(d_head), i.e. s / sqrt(d_head) on the scaled "
                  "logits; false adds s unscaled"},
    )
    training_pass: TrainingPass = field(
        default=TrainingPass.JOINT,
        metadata={"help": "joint: the compressor objectives' loss in one forward over document + prompt + "
                  "answer (equal loss and gradients, one layer stack of kernel launches); two_pass: compress, "
                  "then decode the gathered nuggets"},
    )
    scorer_hidden: int | None = field(
        default=None,
        metadata={"help": "hidden width of the scorer FFN; None = hidden size", "ge": 1},
    )
    lora_rank: int = field(
        default=32, metadata={"help": "LoRA rank of phi and theta (paper: 32)", "ge": 1}
    )
    lora_alpha: int = field(
        default=32, metadata={"help": "LoRA alpha (scaling alpha / rank)", "ge": 1}
    )
    lora_dropout: float = field(
        default=0.0, metadata={"help": "LoRA dropout", "ge": 0.0, "lt": 1.0}
    )
    lora_target_modules: list[str] = field(
        default_factory=lambda: ["q_proj", "k_proj", "v_proj", "o_proj"],
        metadata={"help": "module names that get LoRA in both adapters", "nonempty": True},
    )
    soft_prompt_tokens: int = field(
        default=1,
        metadata={"help": "length of the soft prompt (autoencoding / continuation)", "ge": 0},
    )
    threshold: float | None = field(
        default=None,
        metadata={"help": "autoregressive Lambda: score > threshold makes a nugget (calibrate)"},
    )
    recent_window: int = field(
        default=64,
        metadata={"help": "omega_r: tokens attended directly in autoregressive mode", "ge": 1},
    )
    distant_window: int | None = field(
        default=None,
        metadata={
            "help": "omega_d: nuggets older than omega_r + omega_d drop; None = unbounded",
            "ge": 1,
        },
    )
    max_nuggets: int | None = field(
        default=None,
        metadata={
            "help": "cap on the distant nuggets kept (the most recent); None = no cap",
            "ge": 1,
        },
    )
    scorer_window: int | None = field(
        default=None,
        metadata={
            "help": "autoregressive mode: the frozen scorer LM attends to this many recent "
            "tokens (bounded memory); None = recent_window",
            "ge": 1,
        },
    )

    def __post_init__(self) -> None:
        self.residual = _enum_value(ResidualMode, "residual", self.residual)
        self.training_pass = _enum_value(TrainingPass, "training_pass", self.training_pass)
        ratio = self.ratio
        if isinstance(ratio, bool) or not isinstance(ratio, int | float) or math.isnan(ratio):
            raise ValueError(f"Nugget2DConfig.ratio={ratio!r} must be a number in (0, 1]")
        if not 0.0 < ratio <= 1.0:
            raise ValueError(f"Nugget2DConfig.ratio={ratio!r} must be in (0, 1]")
        if isinstance(self.scorer_layer, bool) or not isinstance(self.scorer_layer, int):
            raise ValueError(f"Nugget2DConfig.scorer_layer={self.scorer_layer!r} must be an int")
        if self.scorer_layer < 0:
            raise ValueError(f"Nugget2DConfig.scorer_layer={self.scorer_layer!r} must be >= 0")
        for name in ("lora_rank", "lora_alpha", "recent_window"):
            _positive_int_or_none(name, getattr(self, name))
        for name in ("distant_window", "max_nuggets", "scorer_window", "scorer_hidden"):
            _positive_int_or_none(name, getattr(self, name))
        if isinstance(self.soft_prompt_tokens, bool) or self.soft_prompt_tokens < 0:
            raise ValueError("Nugget2DConfig.soft_prompt_tokens must be an int >= 0")
        if not 0.0 <= self.lora_dropout < 1.0:
            raise ValueError(f"Nugget2DConfig.lora_dropout={self.lora_dropout!r} not in [0, 1)")
        if self.threshold is not None and not math.isfinite(float(self.threshold)):
            raise ValueError(f"Nugget2DConfig.threshold={self.threshold!r} must be finite")

    @property
    def scorer_context(self) -> int:
        """Window of the frozen scorer LM in autoregressive mode."""
        return self.scorer_window or self.recent_window

    def scorer_config(self) -> NuggetConfig:
        """The config of the shared `NuggetScorer` (scorer FFN only: no W^V, no feedback)."""
        return NuggetConfig(
            ratio=self.ratio,
            scorer_layer=self.scorer_layer,
            residual=self.residual,
            scale_residual=self.scale_residual,
            feedback=False,
            value_projection=False,
            selector=SelectorKind.TOPK,
            scorer_hidden=self.scorer_hidden,
        )

    def check_depth(self, num_layers: int) -> None:
        if self.scorer_layer > num_layers:
            raise ValueError(
                f"Nugget2DConfig.scorer_layer={self.scorer_layer} exceeds the number of LM "
                f"layers ({num_layers}); use 0..{num_layers}"
            )
