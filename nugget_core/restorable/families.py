"""``model_type`` -> `Seq2SeqFamily` for the RE model."""

from __future__ import annotations

from transformers import PreTrainedModel

from .bart import BartFamily
from .family import Seq2SeqFamily
from .t5 import T5Family

FAMILIES: dict[str, Seq2SeqFamily] = {"bart": BartFamily(), "t5": T5Family()}


def get_family(model: PreTrainedModel) -> Seq2SeqFamily:
    """The family of ``model`` (a ``*ForConditionalGeneration``); ValueError if unsupported."""
    model_type = getattr(model.config, "model_type", None)
    family = FAMILIES.get(str(model_type))
    if family is None or not getattr(model.config, "is_encoder_decoder", False):
        raise ValueError(
            f"the RE model wraps HF encoder-decoders of model_type {sorted(FAMILIES)}, got {model_type!r}"
        )
    return family
