"""Nugget2D compressor mode against the vanilla HF causal LM (litgpt-style)."""

from __future__ import annotations

import pytest
import torch

from nugget_core import ResidualMode
from nugget_core.nugget2d import Nugget2DConfig, Nugget2DModel, TinyCausalSpec, build_tiny_causal_lm
from nugget_core.nugget2d.generation import generate_from_context

pytestmark = pytest.mark.usefixtures("one_thread")

FAMILIES = ["llama", "mistral", "qwen2"]


def _vanilla_continuation_logits(base, batch) -> list[torch.Tensor]:
    """Logits of the plain LM over doc + prompt + answer, at the prompt+answer tokens."""
    out = []
    for b in range(2):
        parts = [
            batch[f"{name}_ids"][b, : int(batch[f"{name}_mask"][b].sum())]
            for name in ("doc", "prompt", "answer")
        ]
        with torch.no_grad():
            logits = base(torch.cat(parts)[None]).logits[0]
        out.append(logits[len(parts[0]) :])
    return out


@pytest.mark.parametrize("training_pass", ["joint", "two_pass"])
@pytest.mark.parametrize("impl", ["eager", "sdpa"])
@pytest.mark.parametrize("family", FAMILIES)
def test_all_tokens_selected_reproduces_vanilla_logits(causal_factory, doc_batch, family, impl, training_pass):
    base = causal_factory(family, impl)
    reference = _vanilla_continuation_logits(base, doc_batch)
    model = Nugget2DModel(base, Nugget2DConfig(ratio=1.0, scorer_layer=1, lora_rank=4, training_pass=training_pass))
    out = model(**doc_batch)  # straight-through: zero bias in the forward pass
    assert out.nugget_counts.tolist() == [12, 8]
    if training_pass == "two_pass":
        assert bool(out.context.mask.all(dim=1)[0]) and out.context.counts.tolist() == [12, 8]
    for b in range(2):
        n = int(doc_batch["prompt_mask"][b].sum() + doc_batch["answer_mask"][b].sum())
        torch.testing.assert_close(out.logits[b, :n], reference[b])


@pytest.mark.parametrize(
    ("family", "window"),
    [("mistral", {"sliding_window": 4096}),
     ("qwen2", {"use_sliding_window": True, "sliding_window": 4096, "max_window_layers": 1})],
)
def test_a_sliding_window_covering_every_position_is_accepted_and_exact(doc_batch, family, window):
    """A window as long as max_position_embeddings (the family fact ``sliding_window``)
    never masks anything, so Nugget2D, which builds its own masks, still matches the plain
    model; shorter windows are refused (test_nugget2d_family_facts.py)."""
    base = build_tiny_causal_lm(family, TinyCausalSpec(attn_implementation="eager"), **window)
    reference = _vanilla_continuation_logits(base, doc_batch)
    out = Nugget2DModel(base, Nugget2DConfig(ratio=1.0, scorer_layer=1, lora_rank=4))(**doc_batch)
    assert out.nugget_counts.tolist() == [12, 8]
    for b in range(2):
        n = int(doc_batch["prompt_mask"][b].sum() + doc_batch["answer_mask"][b].sum())
        torch.testing.assert_close(out.logits[b, :n], reference[b])


@pytest.mark.parametrize("impl", ["eager", "sdpa"])
def test_direct_residual_changes_the_forward_pass(causal_factory, doc_batch, impl):
    base = causal_factory("llama", impl)
    reference = _vanilla_continuation_logits(base, doc_batch)
    config = Nugget2DConfig(ratio=1.0, scorer_layer=1, lora_rank=4, residual="direct")
    out = Nugget2DModel(base, config)(**doc_batch)
    assert not torch.allclose(out.logits[0, :8], reference[0], atol=1e-4)


@pytest.mark.parametrize("family", FAMILIES)
def test_compressed_cache_holds_exactly_k_positions(causal_factory, doc_batch, family):
    base = causal_factory(family)
    model = Nugget2DModel(base, Nugget2DConfig(ratio=0.25, scorer_layer=1, lora_rank=4))
    ctx = model.compress(doc_batch["doc_ids"], doc_batch["doc_mask"])
    # k = ceil(0.25 * 12) = 3 and ceil(0.25 * 8) = 2; the last real token is always kept.
    assert ctx.counts.tolist() == [3, 2]
    assert ctx.positions[0, -1].item() == 11 and ctx.positions[1, 1].item() == 7
    assert ctx.kv.length == 3
    n_layers = base.config.num_hidden_layers
    assert len(ctx.kv.keys) == len(ctx.kv.values) == n_layers
    for keys, values in zip(ctx.kv.keys, ctx.kv.values, strict=True):
        assert keys.shape == values.shape == (2, base.config.num_key_value_heads, 3, 8)
    assert ctx.nbytes() == 2 * n_layers * 2 * 2 * 3 * 8 * 4  # K+V, layers, batch, heads, k, d, fp32
    # The kept states are the full encoding's states at those positions (rotary intact).
    full = model.compress(doc_batch["doc_ids"], doc_batch["doc_mask"], ratio=1.0)
    torch.testing.assert_close(ctx.kv.keys[1][0], full.kv.keys[1][0][:, ctx.positions[0]])


def test_straight_through_gives_scorer_gradients_and_unchanged_forward(causal_factory, doc_batch):
    base = causal_factory("llama", "sdpa")
    config = Nugget2DConfig(ratio=0.5, scorer_layer=1, lora_rank=4)
    model = Nugget2DModel(base, config)
    out = model(**doc_batch)
    out.loss.backward()
    grads = [p.grad for p in model.scorer.parameters()]
    assert all(g is not None for g in grads) and sum(float(g.abs().sum()) for g in grads) > 0
    # Same selection, no residual at all: identical forward.
    model.config.residual = ResidualMode.NONE
    with torch.no_grad():
        plain = model(**doc_batch)
    torch.testing.assert_close(out.logits.detach(), plain.logits)
    torch.testing.assert_close(out.loss.detach(), plain.loss)


def test_generation_matches_teacher_forced_argmax(causal_factory, doc_batch):
    base = causal_factory("qwen2", "eager")
    model = Nugget2DModel(base, Nugget2DConfig(ratio=0.3, scorer_layer=1, lora_rank=4))
    with torch.no_grad():
        for name, p in model.peft.named_parameters():
            if "lora_B" in name:
                p.normal_(std=0.5)  # make phi and theta matter
        ctx = model.compress(doc_batch["doc_ids"], doc_batch["doc_mask"])
        gen = generate_from_context(
            model, ctx, doc_batch["prompt_ids"], doc_batch["prompt_mask"], max_new_tokens=4
        )
        assert gen.tokens.shape == (2, 4) and gen.final_kv_positions == ctx.kv.length + 3 + 3
        # Re-read prompt + generated tokens in one pass: argmax must reproduce them.
        for b in range(2):
            n_p = int(doc_batch["prompt_mask"][b].sum())
            ids = torch.cat([doc_batch["prompt_ids"][b, :n_p], gen.tokens[b]])[None]
            ones = torch.ones(2, ids.shape[1], dtype=torch.long)
            logits, _ = model.decoder_pass(ctx, model.embed(ids.expand(2, -1)), ones)
            assert logits[b, n_p - 1 : -1].argmax(-1).tolist() == gen.tokens[b].tolist()


def test_unsupported_architecture_is_refused(model_factory):
    with pytest.raises(ValueError, match="Nugget2D does not support model_type='bart'"):
        Nugget2DModel(model_factory("bart"), Nugget2DConfig())
