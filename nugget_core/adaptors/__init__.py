"""Per-architecture adaptors for both families and their one registry.

``get_adaptor(model)`` (seq2seq, Nugget) and ``get_adaptor(model, "causal")`` /
``get_causal_adaptor(model)`` (decoder-only, Nugget2D) look up `register_adaptor`'s
table by ``config.model_type``; see `nugget_core.adaptors.registry` for adding a family
and `FamilyFacts` (``adaptor.facts(model)``) for the per-family facts a causal adaptor
states and Nugget2D checks.
"""

from __future__ import annotations

from .bart import BartAdaptor
from .base import AdaptorKind, CausalLMAdaptor, Seq2SeqAdaptor
from .facts import SUPPORTED_LAYER_TYPES, FamilyFacts
from .llama import LlamaFamilyAdaptor
from .registry import (
    SUPPORTED_ATTENTION,
    get_adaptor,
    get_causal_adaptor,
    register_adaptor,
    supported_model_types,
)
from .t5 import T5Adaptor

register_adaptor(BartAdaptor, "bart", "mbart")
register_adaptor(T5Adaptor, "t5")
register_adaptor(LlamaFamilyAdaptor, "llama", "mistral", "qwen2")

__all__ = [
    "SUPPORTED_ATTENTION",
    "SUPPORTED_LAYER_TYPES",
    "AdaptorKind",
    "BartAdaptor",
    "CausalLMAdaptor",
    "FamilyFacts",
    "LlamaFamilyAdaptor",
    "Seq2SeqAdaptor",
    "T5Adaptor",
    "get_adaptor",
    "get_causal_adaptor",
    "register_adaptor",
    "supported_model_types",
]
