"""One registry of adaptors for both model families, keyed by ``config.model_type``.

Seq2seq adaptors (`Seq2SeqAdaptor`, used by Nugget) and causal-LM adaptors
(`CausalLMAdaptor`, used by Nugget2D) are registered the same way; the adaptor class
says which family it serves (``kind``), so one ``model_type`` may have one adaptor per
family. Adding an architecture whose layout matches an existing adaptor is one call::

    from nugget_core.adaptors import LlamaFamilyAdaptor, register_adaptor

    # any *ForCausalLM with model.model.{embed_tokens, layers, norm, rotary_emb}
    register_adaptor(LlamaFamilyAdaptor, "olmo2")

A different layout subclasses `Seq2SeqAdaptor` / `CausalLMAdaptor` (overriding the
locator methods) and registers that class.
"""

from __future__ import annotations

from typing import Literal, overload

from transformers import PreTrainedModel

from .base import AdaptorKind, CausalLMAdaptor, Seq2SeqAdaptor

#: Attention implementations whose masks accept additive float biases (nugget scores).
SUPPORTED_ATTENTION = ("eager", "sdpa")
_METHOD = {"seq2seq": "Nugget", "causal": "Nugget2D"}
_FAMILY = {"seq2seq": "encoder-decoder types", "causal": "causal LMs"}

_REGISTRY: dict[tuple[AdaptorKind, str], type[Seq2SeqAdaptor] | type[CausalLMAdaptor]] = {}


def register_adaptor(
    adaptor: type[Seq2SeqAdaptor] | type[CausalLMAdaptor], *model_types: str
) -> None:
    """Use ``adaptor`` (a class) for models whose ``config.model_type`` is in ``model_types``.

    The family comes from ``adaptor.kind`` ("seq2seq" or "causal"); registering a type
    again for the same family replaces the previous adaptor.
    """
    if not model_types:
        raise ValueError("register_adaptor needs at least one model_type")
    kind = adaptor.kind
    if kind not in _METHOD:
        raise ValueError(f"{adaptor.__name__}.kind={kind!r} is not one of {sorted(_METHOD)}")
    for model_type in model_types:
        _REGISTRY[(kind, model_type)] = adaptor


def supported_model_types(kind: AdaptorKind = "seq2seq") -> list[str]:
    """The registered ``model_type`` values of one family, sorted."""
    return sorted(t for k, t in _REGISTRY if k == kind)


@overload
def get_adaptor(model: PreTrainedModel, kind: Literal["seq2seq"] = ...) -> Seq2SeqAdaptor: ...
@overload
def get_adaptor(model: PreTrainedModel, kind: Literal["causal"]) -> CausalLMAdaptor: ...
def get_adaptor(
    model: PreTrainedModel, kind: AdaptorKind = "seq2seq"
) -> Seq2SeqAdaptor | CausalLMAdaptor:
    """The ``kind`` adaptor for ``model``; a clear error for unsupported models.

    Checks the family (``config.is_encoder_decoder``), the registered ``model_type``, the
    adaptor's structural check and the attention implementation (eager or sdpa: nugget
    scores ride on an additive float mask).
    """
    config = getattr(model, "config", None)
    model_type = getattr(config, "model_type", None)
    method = _METHOD[kind]
    cls = _REGISTRY.get((kind, model_type))  # type: ignore[arg-type]
    encoder_decoder = bool(getattr(config, "is_encoder_decoder", False))
    if cls is None or encoder_decoder != (kind == "seq2seq"):
        raise ValueError(
            f"{method} does not support model_type={model_type!r} ({type(model).__name__}); "
            f"supported {_FAMILY[kind]}: {', '.join(supported_model_types(kind))}"
        )
    adaptor = cls()
    adaptor.check(model)
    implementation = config._attn_implementation  # type: ignore[union-attr]
    if implementation not in SUPPORTED_ATTENTION:
        raise ValueError(
            f"attn_implementation={implementation!r} is not supported by {method} (nugget "
            f"scores ride on an additive float mask); use one of {SUPPORTED_ATTENTION}"
        )
    return adaptor


def get_causal_adaptor(model: PreTrainedModel) -> CausalLMAdaptor:
    """``get_adaptor(model, "causal")``: the Nugget2D adaptor for a decoder-only LM."""
    return get_adaptor(model, "causal")
