"""What Nugget needs to know about one seq2seq architecture.

An adaptor only *locates* modules of an unmodified Hugging Face model; the Nugget parts
are attached from outside with forward hooks (`nugget_core.residual`,
`nugget_core.encoder_tap`), so no HF class is copied or subclassed.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

from torch import nn
from transformers import PreTrainedModel


class Seq2SeqAdaptor(ABC):
    """Locates the pieces of one encoder-decoder family."""

    #: ``config.model_type`` values this adaptor handles.
    model_types: tuple[str, ...] = ()
    #: Keyword under which the decoder layer passes the cross-attention mask.
    cross_mask_kwarg: str = "attention_mask"
    #: Keyword under which the decoder layer passes the encoder states to cross-attention.
    cross_states_kwarg: str = "key_value_states"

    @abstractmethod
    def encoder_layers(self, model: PreTrainedModel) -> nn.ModuleList:
        """The encoder's transformer layers, bottom first."""

    @abstractmethod
    def embedding_modules(self, model: PreTrainedModel) -> list[nn.Module]:
        """Modules producing the encoder's layer-0 states (frozen with feedback)."""

    @abstractmethod
    def cross_attention_modules(self, model: PreTrainedModel) -> list[nn.Module]:
        """One cross-attention module per decoder layer."""

    def hidden_size(self, model: PreTrainedModel) -> int:
        return int(model.config.d_model)
