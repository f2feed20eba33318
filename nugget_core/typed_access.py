"""Typed access to what torch and transformers type loosely, each checked at run time.

torch types any attribute of an ``nn.Module`` it does not declare as ``Tensor | Module``
(``Module.__getattr__``), so an HF model's sub-modules (``model.model.layers``), methods
of mixins it does not declare (``generate``) and output fields HF declares optional
(``out.logits``) reach the type checker with a type that is too wide. These helpers narrow
them with a check that fails with a message naming what was expected, instead of an
``AttributeError`` deep inside a forward pass.
"""

from __future__ import annotations

from types import MethodType
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import torch
from torch import nn
from transformers import Cache, DynamicCache, GenerationMixin, PreTrainedModel

if TYPE_CHECKING:
    from transformers.generation.utils import GenerateOutput

T = TypeVar("T")


def checked(value: object, kind: type[T], what: str) -> T:
    """``value``, checked to be a ``kind``; ``what`` names it in the error."""
    if not isinstance(value, kind):
        raise TypeError(f"{what} is {type(value).__name__}, expected {kind.__name__}")
    return value


def child(owner: object, name: str, kind: type[T]) -> T:
    """``owner.<name>``, checked to be a ``kind`` (e.g. an HF model's ``layers``, a
    ``ModuleList``)."""
    return checked(getattr(owner, name), kind, f"{type(owner).__name__}.{name}")


def hf_generate(model: PreTrainedModel, **generate_kwargs: Any) -> GenerateOutput | torch.LongTensor:
    """``model.generate(**generate_kwargs)``, for an HF model with ``generate`` (a
    ``*ForConditionalGeneration`` / ``*ForCausalLM``; a bare backbone has none).
    ``PreTrainedModel`` declares no ``generate``: the check narrows to the model class
    with HF's ``GenerationMixin``."""
    if not isinstance(model, GenerationMixin):
        raise TypeError(f"{type(model).__name__} has no generate(): not an HF generation model")
    # transformers annotates generate's self as its GenerativePreTrainedModel protocol,
    # written for another checker (ty): it names attributes (hf_device_map,
    # _previous_max_cache_length) that PreTrainedModel sets at run time without declaring,
    # so no HF model class satisfies it under mypy, its own Auto classes included
    return model.generate(**generate_kwargs)  # type: ignore[misc]


class _WithLogits(Protocol):
    @property
    def logits(self) -> torch.Tensor | None: ...


class _WithCache(Protocol):
    @property
    def past_key_values(self) -> Cache | None: ...


def logits_of(out: _WithLogits) -> torch.Tensor:
    """``out.logits`` of an HF LM output (declared optional: a model run without an LM
    head has none)."""
    if out.logits is None:
        raise ValueError(f"{type(out).__name__} has no logits: the model ran without its LM head")
    return out.logits


def dynamic_cache_of(out: _WithCache) -> DynamicCache:
    """``out.past_key_values`` of a pass run with ``use_cache=True`` on a ``DynamicCache``."""
    cache = out.past_key_values
    if not isinstance(cache, DynamicCache):
        raise ValueError(f"{type(out).__name__}.past_key_values is {type(cache).__name__}, not a DynamicCache "
                         "(run the model with use_cache=True)")
    return cache


def input_embedding(model: nn.Module) -> nn.Embedding:
    """``model.get_input_embeddings()`` of an HF model or stack, checked to be the token
    embedding table (HF declares it a plain ``nn.Module``)."""
    embed = child(model, "get_input_embeddings", MethodType)()
    return checked(embed, nn.Embedding, f"{type(model).__name__}.get_input_embeddings()")
