"""What Nugget / Nugget2D need to know about one architecture.

An adaptor only *locates* modules of an unmodified Hugging Face model; the Nugget parts
are attached from outside (forward hooks for seq2seq: `nugget_core.residual`,
`nugget_core.nugget.encoder_tap`; 4D masks, position ids and caches for causal LMs), so
no HF class is copied or subclassed. Register adaptors with
`nugget_core.adaptors.register_adaptor`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import ClassVar, Literal

from torch import nn
from transformers import PreTrainedModel

from .facts import FamilyFacts

AdaptorKind = Literal["seq2seq", "causal"]


class Seq2SeqAdaptor(ABC):
    """Locates the pieces of one encoder-decoder family (Nugget)."""

    kind: ClassVar[AdaptorKind] = "seq2seq"
    #: Keyword under which the decoder layer passes the cross-attention mask.
    cross_mask_kwarg: ClassVar[str] = "attention_mask"
    #: Keyword under which the decoder layer passes the encoder states to cross-attention.
    cross_states_kwarg: ClassVar[str] = "key_value_states"

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

    def attention_scale(self, model: PreTrainedModel) -> float:
        """The factor the decoder's cross-attention applies to ``q k^T`` before adding
        the mask (``1/sqrt(d_head)``): eq. 5 scales the nugget residual by it too."""
        return float(model.config.d_model // model.config.decoder_attention_heads) ** -0.5

    def check(self, model: PreTrainedModel) -> None:
        """Raise ``ValueError`` if ``model`` lacks the layout this adaptor expects."""
        del model  # nothing beyond the lookup by model_type to check by default


class CausalLMAdaptor(ABC):
    """Locates the pieces of one decoder-only ``*ForCausalLM`` family (Nugget2D).

    Nugget2D drives the unmodified model through 4D float masks, position ids and cache
    objects given to the backbone's forward, so the family must accept a 4D additive
    mask and cache keys after rotary embedding. What else differs between families
    (embedding and attention scales, soft-capping, sliding windows, ...) is stated by
    `facts`; `check` refuses what Nugget2D does not support.
    """

    kind: ClassVar[AdaptorKind] = "causal"

    @abstractmethod
    def backbone(self, model: PreTrainedModel) -> nn.Module:
        """The decoder stack below the LM head (called with ``inputs_embeds`` or ids)."""

    @abstractmethod
    def layers(self, model: PreTrainedModel) -> nn.ModuleList:
        """The decoder layers, bottom first."""

    @abstractmethod
    def embed_tokens(self, model: PreTrainedModel) -> nn.Embedding:
        """The input embedding table."""

    @abstractmethod
    def rotary(self, model: PreTrainedModel) -> nn.Module:
        """The rotary embedding module: ``rotary(x, position_ids) -> (cos, sin)``."""

    @abstractmethod
    def facts(self, model: PreTrainedModel) -> FamilyFacts:
        """The family facts Nugget2D depends on, read from ``model`` (`FamilyFacts`)."""

    def hidden_size(self, model: PreTrainedModel) -> int:
        return int(model.config.hidden_size)

    def check(self, model: PreTrainedModel) -> None:
        """Raise ``ValueError`` if ``model`` lacks the layout this adaptor expects or has
        a fact Nugget2D does not support (`FamilyFacts.refuse_unsupported`)."""
        self.facts(model).refuse_unsupported(str(model.config.model_type))
