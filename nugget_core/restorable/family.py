"""What the RE model needs to know about one Hugging Face encoder-decoder family.

The HF model is wrapped, not forked: a family only locates / swaps modules of the
unmodified model (its decoder's cross-attention, its LM head) and reads the sizes the
extra encoder layers copy. `nugget_core.restorable.families` maps ``model_type`` to one.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass

import torch
from torch import nn
from transformers import PreTrainedModel


@dataclass(frozen=True)
class LayerSettings:
    """Sizes of one encoder layer of the base model (copied by the extra layers)."""

    d_model: int
    heads: int
    ffn_dim: int
    dropout: float
    activation: str
    layer_norm_eps: float


class Seq2SeqFamily(ABC):
    """Module surgery and LM head of one encoder-decoder family (BART, T5)."""

    @abstractmethod
    def encoder_layer_settings(self, model: PreTrainedModel) -> LayerSettings:
        """Heads / FFN size / dropout / activation / LN epsilon of the encoder's layers."""

    @abstractmethod
    def remove_cross_attention(self, model: PreTrainedModel) -> None:
        """Delete every decoder cross-attention sublayer (the input decoder has none, so DDP
        must not see parameters that never get a gradient)."""

    @abstractmethod
    def install_gating(self, model: PreTrainedModel, d_repr: int) -> None:
        """Replace every decoder cross-attention by the RE gating layer reading a
        ``d_repr`` vector, followed by residual + LayerNorm (RE fig. 2(c))."""

    @abstractmethod
    def lm_logits(self, model: PreTrainedModel, hidden: torch.Tensor) -> torch.Tensor:
        """The decoder's last hidden states -> vocabulary logits, as the HF model's forward
        computes them."""


def place_like(module: nn.Module, model: PreTrainedModel) -> nn.Module:
    """``module`` on the device and in the floating dtype of ``model``'s weights."""
    return module.to(device=model.device, dtype=model.dtype)
