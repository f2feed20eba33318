"""Per-architecture adaptors and the lookup by ``config.model_type``."""

from __future__ import annotations

from transformers import PreTrainedModel

from .bart import BartAdaptor
from .base import Seq2SeqAdaptor
from .llama import LlamaFamilyAdaptor, get_causal_adaptor
from .t5 import T5Adaptor

_ADAPTORS: tuple[type[Seq2SeqAdaptor], ...] = (BartAdaptor, T5Adaptor)


def supported_model_types() -> list[str]:
    return sorted(t for cls in _ADAPTORS for t in cls.model_types)


def get_adaptor(model: PreTrainedModel) -> Seq2SeqAdaptor:
    """The adaptor for ``model``; a clear error naming the supported types otherwise."""
    config = getattr(model, "config", None)
    model_type = getattr(config, "model_type", None)
    for cls in _ADAPTORS:
        if model_type in cls.model_types and getattr(config, "is_encoder_decoder", False):
            return cls()
    raise ValueError(
        f"Nugget does not support model_type={model_type!r} ({type(model).__name__}); "
        f"supported encoder-decoder types: {', '.join(supported_model_types())}"
    )


__all__ = [
    "BartAdaptor",
    "LlamaFamilyAdaptor",
    "Seq2SeqAdaptor",
    "T5Adaptor",
    "get_adaptor",
    "get_causal_adaptor",
    "supported_model_types",
]
