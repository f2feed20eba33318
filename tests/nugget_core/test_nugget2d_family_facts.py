"""The causal adaptor's family facts (`FamilyFacts`): read from tiny LLaMA / Mistral /
Qwen2 configs, and the unsupported ones refused by name before any Nugget2D work."""

from __future__ import annotations

import dataclasses

import pytest
import torch
import transformers

from nugget_core.adaptors import (
    FamilyFacts,
    LlamaFamilyAdaptor,
    get_causal_adaptor,
    register_adaptor,
)
from nugget_core.adaptors.registry import _REGISTRY
from nugget_core.nugget2d import Nugget2DConfig, Nugget2DModel, TinyCausalSpec, build_tiny_causal_lm

pytestmark = pytest.mark.usefixtures("one_thread")

HEAD_DIM = 32 // 4  # TinyCausalSpec: hidden 32, 4 heads
LLAMA_FACTS = FamilyFacts(
    embedding_scale=1.0,
    attention_scale=HEAD_DIM**-0.5,
    attn_logit_softcapping=None,
    sliding_window=None,
    max_positions=4096,
    layer_types=("full_attention", "full_attention"),
    rotary_fraction=1.0,
    keys_cached_after_rotary=True,
    tied_embeddings=False,
    final_logit_softcapping=None,
)
SLIDING = ("sliding_attention", "sliding_attention")


@pytest.mark.parametrize(
    ("family", "config", "expected"),
    [
        ("llama", {}, {}),
        ("mistral", {}, {}),  # the tiny builder's default: no window
        ("mistral", {"sliding_window": 4096}, {"sliding_window": 4096, "layer_types": SLIDING}),
        ("qwen2", {"sliding_window": 16}, {}),  # a window size without use_sliding_window
        ("qwen2", {"use_sliding_window": True, "sliding_window": 4096, "max_window_layers": 1},
         {"sliding_window": 4096, "layer_types": ("full_attention", "sliding_attention")}),
        ("llama", {"tie_word_embeddings": True, "head_dim": 16},
         {"tied_embeddings": True, "attention_scale": 16**-0.5}),
    ],
)
def test_the_llama_adaptor_reads_each_familys_facts(family, config, expected):
    lm = build_tiny_causal_lm(family, **config)
    facts = LlamaFamilyAdaptor().facts(lm)
    assert facts == dataclasses.replace(LLAMA_FACTS, **expected)
    get_causal_adaptor(lm)  # a window covering max_position_embeddings is accepted


@pytest.mark.parametrize(
    ("family", "config", "named"),
    [
        ("mistral", {"sliding_window": 16}, "sliding_window=16 of model_type='mistral'"),
        ("qwen2", {"use_sliding_window": True, "sliding_window": 16, "max_window_layers": 1},
         "sliding_window=16 of model_type='qwen2'"),
        ("llama", {"attn_logit_softcapping": 50.0}, "attn_logit_softcapping=50.0 of model_type='llama'"),
        ("llama", {"layer_types": ["full_attention", "chunked_attention"]},
         r"layer_types=\['chunked_attention'\] of model_type='llama'"),
        ("llama", {"rope_parameters": {"rope_type": "default", "rope_theta": 1e4, "partial_rotary_factor": 0.5}},
         "rotary_fraction=0.5 of model_type='llama'"),
    ],
)
def test_unsupported_facts_are_refused_by_name_before_any_work(family, config, named):
    lm = build_tiny_causal_lm(family, **config)
    with pytest.raises(ValueError, match=f"Nugget2D does not support {named}"):
        get_causal_adaptor(lm)
    with pytest.raises(ValueError, match=named):
        Nugget2DModel(lm, Nugget2DConfig(scorer_layer=1, lora_rank=4))
    assert not any("lora" in name for name, _ in lm.named_modules())  # refused before attaching adapters


def _tiny_gemma2(**config) -> transformers.PreTrainedModel:
    spec = TinyCausalSpec()
    gemma = transformers.Gemma2ForCausalLM(transformers.Gemma2Config(
        vocab_size=spec.vocab_size, hidden_size=spec.hidden_size, intermediate_size=spec.intermediate_size,
        num_hidden_layers=spec.layers, num_attention_heads=spec.heads, num_key_value_heads=spec.kv_heads,
        head_dim=HEAD_DIM, max_position_embeddings=spec.max_positions, **config))
    gemma.set_attn_implementation("eager")  # Gemma 2 has no sdpa (soft-capping)
    return gemma.eval()


@pytest.mark.parametrize(
    ("config", "named"),
    [
        ({}, "attn_logit_softcapping=50.0 of model_type='gemma2'"),
        # without soft-capping and windows, the LLaMA adaptor's own assumptions fail by name
        ({"attn_logit_softcapping": None, "layer_types": ["full_attention"] * 2},
         "embedding_scale=1.0 .* model_type='gemma2' embeds with Gemma2TextScaledWordEmbedding"),
    ],
)
def test_gemma2_registered_as_llama_is_refused_by_fact(config, named):
    """Gemma 2 has the LLaMA layout (model.model.{embed_tokens, layers, rotary_emb}), so
    registering the LLaMA adaptor for it finds every module; its facts refuse it."""
    register_adaptor(LlamaFamilyAdaptor, "gemma2")
    try:
        with pytest.raises(ValueError, match=named):
            get_causal_adaptor(_tiny_gemma2(**config))
    finally:
        del _REGISTRY[("causal", "gemma2")]


def test_a_different_attention_scale_is_refused(causal_factory):
    lm = causal_factory("qwen2")
    for layer in lm.model.layers:
        layer.self_attn.scaling = 0.25  # what e.g. Gemma's query_pre_attn_scalar does
    with pytest.raises(ValueError, match=r"attention_scale=0.35\d+ .* layer 0 of model_type='qwen2' scales q k\^T by 0.25"):
        get_causal_adaptor(lm)


def test_learned_embeddings_start_at_the_scale_tokens_reach_layer_0(causal_factory):
    """The soft prompt / ICAE slots are drawn at the table's spread times embedding_scale
    (Gemma's token rows reach layer 0 multiplied by sqrt(d))."""
    model = Nugget2DModel(causal_factory(), Nugget2DConfig(scorer_layer=1, lora_rank=4))
    table_std = float(model.adaptor.embed_tokens(model.lm).weight.std())
    torch.manual_seed(0)
    assert float(model.random_embeddings(2000).std()) == pytest.approx(table_std, rel=0.05)
    model.facts = dataclasses.replace(model.facts, embedding_scale=8.0)
    assert float(model.random_embeddings(2000).std()) == pytest.approx(8 * table_std, rel=0.05)
