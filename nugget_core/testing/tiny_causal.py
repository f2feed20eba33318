"""Random-init tiny LLaMA-family causal LMs (unit tests, smoke runs; no hub access)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # torch / transformers load on build, not on import (the spec is light)
    from transformers import PreTrainedModel

#: family -> (config class, model class) names in ``transformers``.
_FAMILIES = {
    "llama": ("LlamaConfig", "LlamaForCausalLM"),
    "mistral": ("MistralConfig", "MistralForCausalLM"),
    "qwen2": ("Qwen2Config", "Qwen2ForCausalLM"),
}


@dataclass
class TinyCausalSpec:
    """Size of a tiny causal LM; grouped-query attention (kv_heads < heads) on purpose."""

    vocab_size: int = 64
    hidden_size: int = 32
    layers: int = 2
    heads: int = 4
    kv_heads: int = 2
    intermediate_size: int = 64
    max_positions: int = 4096
    attn_implementation: str = "sdpa"
    # Larger than HF's 0.02 when a test must learn through the frozen LM head: with
    # 0.02 the largest reachable logit is ~1 (normed states x tiny head rows), which
    # floors the loss near log(vocab).
    initializer_range: float = 0.02


def build_tiny_causal_lm(
    family: str = "llama", spec: TinyCausalSpec | None = None, seed: int = 0, **config_overrides: object
) -> PreTrainedModel:
    """A random-init ``{Llama,Mistral,Qwen2}ForCausalLM`` in eval mode.

    ``config_overrides`` go to the config class as keywords, so its own derivations run
    (e.g. Qwen2's ``layer_types`` from ``use_sliding_window``): the adaptor tests' family
    facts."""
    if family not in _FAMILIES:
        raise ValueError(f"unknown family {family!r}; use one of {sorted(_FAMILIES)}")
    import torch
    import transformers

    spec = spec or TinyCausalSpec()
    config_cls, model_cls = (getattr(transformers, name) for name in _FAMILIES[family])
    config = config_cls(**{
        "vocab_size": spec.vocab_size,
        "hidden_size": spec.hidden_size,
        "intermediate_size": spec.intermediate_size,
        "num_hidden_layers": spec.layers,
        "num_attention_heads": spec.heads,
        "num_key_value_heads": spec.kv_heads,
        "max_position_embeddings": spec.max_positions,
        "tie_word_embeddings": False,
        "initializer_range": spec.initializer_range,
        "pad_token_id": 0,
        "bos_token_id": 1,
        "eos_token_id": 2,
        **config_overrides,
    })
    if family == "mistral" and "sliding_window" not in config_overrides:
        config.sliding_window = None  # full attention: Nugget2D supplies its own masks
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        model = model_cls(config).eval()
    model.set_attn_implementation(spec.attn_implementation)
    return model
