"""The fast Nugget2D decoder (static cache, merged adapter) against the reference loop.

`generate_from_context` must give the tokens of `reference_generate_from_context`
(DynamicCache, per-step 4D mask, unmerged LoRA) on CPU fp32, for every family and
attention implementation, with trained-looking adapters, soft prompts, the direct
residual, EOS and prompts of different lengths.
"""

from __future__ import annotations

import pytest
import torch

from nugget_core import ResidualMode
from nugget_core.nugget2d import Nugget2DConfig, Nugget2DModel
from nugget_core.nugget2d.generation import generate_from_context
from nugget_core.nugget2d.reference_generation import reference_generate_from_context

pytestmark = pytest.mark.usefixtures("one_thread")


def _model(causal_factory, family="llama", impl="sdpa", residual=ResidualMode.STRAIGHT_THROUGH):
    model = Nugget2DModel(
        causal_factory(family, impl),
        Nugget2DConfig(ratio=0.4, scorer_layer=1, lora_rank=4, residual=residual),
    ).eval()
    with torch.no_grad():
        for name, p in model.peft.named_parameters():
            if "lora_B" in name:
                p.normal_(std=0.5)  # phi and theta both change the outputs
        model.scorer.ffn[-1].bias.fill_(0.3)  # non-zero scores: the direct residual matters
    return model


def _both(model, doc_batch, **kwargs):
    with torch.no_grad():
        ctx = model.compress(doc_batch["doc_ids"], doc_batch["doc_mask"])
        args = (model, ctx, doc_batch["prompt_ids"], doc_batch["prompt_mask"])
        return generate_from_context(*args, **kwargs), reference_generate_from_context(*args, **kwargs)


@pytest.mark.parametrize("impl", ["eager", "sdpa"])
@pytest.mark.parametrize("family", ["llama", "mistral", "qwen2"])
def test_tokens_equal_the_reference_loop(causal_factory, doc_batch, family, impl):
    model = _model(causal_factory, family, impl)
    fast, ref = _both(model, doc_batch, max_new_tokens=12)
    assert fast.tokens.tolist() == ref.tokens.tolist()
    assert fast.final_kv_positions == ref.final_kv_positions
    assert fast.final_kv_bytes == ref.final_kv_bytes and fast.context_kv_bytes == ref.context_kv_bytes


@pytest.mark.parametrize("residual", [ResidualMode.DIRECT, ResidualMode.NONE])
def test_residual_modes_and_soft_prompt(causal_factory, doc_batch, residual):
    model = _model(causal_factory, residual=residual)
    fast, ref = _both(model, doc_batch, max_new_tokens=8, soft_prompt=True)
    assert fast.tokens.tolist() == ref.tokens.tolist()


def test_direct_residual_changes_the_tokens(causal_factory, doc_batch):
    """Guards the test above: the bias the static mask carries is not a no-op here."""
    with torch.no_grad():
        direct = _both(_model(causal_factory, residual=ResidualMode.DIRECT), doc_batch, max_new_tokens=8)[0]
        model = _model(causal_factory, residual=ResidualMode.DIRECT)
        model.scorer.ffn[-1].bias.fill_(30.0)
        strong = _both(model, doc_batch, max_new_tokens=8)[0]
    assert direct.tokens.tolist() != strong.tokens.tolist()


def test_eos_pads_and_stops_like_the_reference(causal_factory, doc_batch):
    model = _model(causal_factory)
    first, _ = _both(model, doc_batch, max_new_tokens=6)
    eos = int(first.tokens[0, 2])  # row 0 emits it at step 2
    fast, ref = _both(model, doc_batch, max_new_tokens=6, eos_token_id=eos, pad_token_id=63)
    assert fast.tokens.tolist() == ref.tokens.tolist()
    assert fast.tokens[0, 3:].eq(63).all()


def test_plain_lm_and_weights_restored(causal_factory, doc_batch):
    model = _model(causal_factory)
    before = {n: p.detach().clone() for n, p in model.lm.named_parameters()}
    fast, ref = _both(model, doc_batch, max_new_tokens=6, adapter=None)
    assert fast.tokens.tolist() == ref.tokens.tolist()
    _both(model, doc_batch, max_new_tokens=6)  # theta merged, then swapped back
    for name, p in model.lm.named_parameters():
        assert torch.equal(p, before[name]), name  # bit-identical, not merge/unmerge drift
    assert model.router.active == ()


def test_merged_adapter_equals_the_unmerged_pass(causal_factory):
    model = _model(causal_factory)
    ids = torch.randint(3, 64, (2, 9))
    with torch.no_grad():
        unmerged = model.lm_forward("decoder", input_ids=ids).logits
        with model.merged_adapter("decoder"):
            assert model.router.active == ()  # no LoRA matmul inside
            merged = model.lm(input_ids=ids).logits
    torch.testing.assert_close(merged, unmerged, rtol=1e-5, atol=1e-5)
    with pytest.raises(RuntimeError, match="torch.no_grad"), model.merged_adapter("decoder"):
        pass
    with torch.no_grad(), model.merged_adapter("decoder"):
        with pytest.raises(RuntimeError, match="'decoder' is merged"):
            model.lm_forward("compressor", input_ids=ids)  # phi would run on theta's weights
    assert model.router.active == ()


def test_cuda_graph_needs_a_cuda_context(causal_factory, doc_batch):
    model = _model(causal_factory)
    with torch.no_grad():
        ctx = model.compress(doc_batch["doc_ids"], doc_batch["doc_mask"])
        with pytest.raises(ValueError, match="cuda_graph=True needs"):
            generate_from_context(model, ctx, doc_batch["prompt_ids"], cuda_graph=True)


def test_consumed_context_gives_the_same_tokens_and_is_emptied(causal_factory, doc_batch):
    model = _model(causal_factory)
    with torch.no_grad():
        ctx = model.compress(doc_batch["doc_ids"], doc_batch["doc_mask"])
        kept = generate_from_context(model, ctx, doc_batch["prompt_ids"], doc_batch["prompt_mask"], 6)
        consumed = generate_from_context(
            model, ctx, doc_batch["prompt_ids"], doc_batch["prompt_mask"], 6, consume_context=True
        )
    assert consumed.tokens.tolist() == kept.tokens.tolist()
    assert consumed.final_kv_bytes == kept.final_kv_bytes
    assert ctx.kv.length == 0 and ctx.nbytes() == 0
    # the storage is released, not merely viewed with length 0
    assert all(t.untyped_storage().nbytes() == 0 for t in (*ctx.kv.keys, *ctx.kv.values))
