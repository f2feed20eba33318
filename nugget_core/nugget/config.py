"""`NuggetConfig`: every knob of a Nugget encoder-decoder, validated at construction.

Nugget (Qin & Van Durme, ICML 2023, https://proceedings.mlr.press/v202/qin23a.html) scores
the encoder states of layer ``l`` with a small FFN, keeps the top ``ceil(r * n)`` tokens
("nuggets") and lets the decoder cross-attend only to them, with the scores added to the
cross-attention logits so that the scorer receives gradients.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from ..config_io import JsonConfig
from ..modes import ResidualMode, SelectorKind
from ..modes import enum_value as _enum_value

__all__ = ["CONFIG_NAME", "NuggetConfig", "ResidualMode", "SelectorKind"]

CONFIG_NAME = "nugget_config.json"


@dataclass
class NuggetConfig(JsonConfig):
    """Configuration of a Nugget encoder-decoder (see module docstring for the paper).

    ``scorer_layer`` is checked against the number of encoder layers when the config is
    attached to a model (`get_nugget_model`); everything else is checked here.
    """

    file_name = CONFIG_NAME  # no annotation: a class attribute, not a dataclass field

    ratio: float = field(
        default=0.1,
        metadata={
            "help": "compression ratio r in (0, 1]: k = ceil(r * n) nuggets",
            "gt": 0.0,
            "le": 1.0,
        },
    )
    scorer_layer: int = field(
        default=3,
        metadata={
            "help": "encoder layer l whose states the scorer reads; 0 = embedding output",
            "ge": 0,
        },
    )
    residual: ResidualMode = field(
        default=ResidualMode.STRAIGHT_THROUGH,
        metadata={"help": "straight_through | direct | none"},
    )
    scale_residual: bool = field(
        default=True,
        metadata={"help": "eq. 5: (q k^T + s) / sqrt(d_head), i.e. s / sqrt(d_head) on the scaled "
                  "logits; false adds s unscaled"},
    )
    feedback: bool = field(
        default=True,
        metadata={"help": "add nugget / non-nugget type embeddings to layer-l states (paper 3.3)"},
    )
    freeze_bottom: bool = field(
        default=True,
        metadata={"help": "freeze the encoder layers below l and its embeddings (paper 3.3), "
                  "with or without feedback (7.1 changes only the feedback)"},
    )
    freeze_shared_embeddings: bool = field(
        default=False,
        metadata={"help": "with freeze_bottom, also freeze a token embedding the encoder shares "
                  "with the decoder / LM head (tied, e.g. mBART-50); paper 3.3 freezes only "
                  "encoder layers, so false"},
    )
    value_projection: bool = field(
        default=True, metadata={"help": "project selected states with W^V (eq. 4)"}
    )
    selector: SelectorKind = field(
        default=SelectorKind.TOPK, metadata={"help": "topk | chunk | sentence"}
    )
    scorer_hidden: int | None = field(
        default=None, metadata={"help": "hidden width of the scorer FFN; None = d_model", "ge": 1}
    )

    def __post_init__(self) -> None:
        self.residual = _enum_value(ResidualMode, "residual", self.residual)
        self.selector = _enum_value(SelectorKind, "selector", self.selector)
        ratio = self.ratio
        if isinstance(ratio, bool) or not isinstance(ratio, int | float) or math.isnan(ratio):
            raise ValueError(f"NuggetConfig.ratio={ratio!r} must be a number in (0, 1]")
        if not 0.0 < ratio <= 1.0:
            raise ValueError(f"NuggetConfig.ratio={ratio!r} must be in (0, 1]")
        if isinstance(self.scorer_layer, bool) or not isinstance(self.scorer_layer, int):
            raise ValueError(f"NuggetConfig.scorer_layer={self.scorer_layer!r} must be an int")
        if self.scorer_layer < 0:
            raise ValueError(f"NuggetConfig.scorer_layer={self.scorer_layer!r} must be >= 0")
        if self.scorer_hidden is not None and self.scorer_hidden < 1:
            raise ValueError(f"NuggetConfig.scorer_hidden={self.scorer_hidden!r} must be >= 1")

    def check_encoder_depth(self, num_layers: int) -> None:
        """Raise if ``scorer_layer`` does not exist in an encoder of ``num_layers`` layers."""
        if self.scorer_layer > num_layers:
            raise ValueError(
                f"NuggetConfig.scorer_layer={self.scorer_layer} exceeds the number of encoder "
                f"layers ({num_layers}); use 0..{num_layers}"
            )
