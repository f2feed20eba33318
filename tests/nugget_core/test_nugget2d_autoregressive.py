"""Autoregressive Nugget2D: incremental == parallel, bounded memory, calibration, baselines."""

from __future__ import annotations

import pytest
import torch

from nugget_core.nugget2d import Nugget2DConfig, Nugget2DModel
from nugget_core.nugget2d.autoregressive import ar_forward, ar_loss, ar_scores
from nugget_core.nugget2d.baselines import CompressiveStream, FullStream, stream_nll, window_nll
from nugget_core.nugget2d.calibration import (
    calibration_scores,
    realised_ratio,
    threshold_for_ratio,
)
from nugget_core.nugget2d.stream import Nugget2DStream


def _model(causal_factory, family="llama", impl="sdpa", **overrides) -> Nugget2DModel:
    config = dict(scorer_layer=1, lora_rank=4, recent_window=4, distant_window=6, max_nuggets=2)
    config.update(overrides)
    model = Nugget2DModel(causal_factory(family, impl), Nugget2DConfig(**config))
    with torch.no_grad():  # non-trivial phi, theta and scorer
        for name, p in model.peft.named_parameters():
            if "lora_B" in name:
                p.normal_(std=0.5)
        for p in model.scorer.parameters():
            p.normal_(std=0.5)
    return model


pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.mark.parametrize(
    ("family", "impl", "residual"),
    [
        ("llama", "eager", "direct"),
        ("mistral", "sdpa", "straight_through"),
        ("qwen2", "sdpa", "direct"),
    ],
)
def test_incremental_decoding_equals_parallel_forward(causal_factory, family, impl, residual):
    model = _model(causal_factory, family, impl, residual=residual)
    ids = torch.randint(3, 64, (1, 40), generator=torch.Generator().manual_seed(3))
    with torch.no_grad():
        scores = ar_scores(model, ids, model.config.scorer_context)
        model.config.threshold = float(scores.quantile(0.6))
        parallel = ar_forward(model, ids)
    stream = Nugget2DStream(model)
    incremental = torch.stack([stream.step(t) for t in ids[0].tolist()])
    assert stream.selected == parallel.selected[0].tolist()
    assert 8 <= sum(stream.selected) <= 24  # nuggets, older ones dropped by window and cap
    torch.testing.assert_close(incremental, parallel.logits[0])


def test_parallel_forward_without_nuggets_is_the_windowed_lm(causal_factory):
    model = _model(causal_factory, recent_window=100, distant_window=None, max_nuggets=None)
    ids = torch.randint(3, 64, (2, 30))
    with torch.no_grad():
        out = ar_forward(model, ids, threshold=1e9)
        reference = model.lm_forward("decoder", input_ids=ids).logits
    assert not out.selected.any()
    torch.testing.assert_close(out.logits, reference)


def test_ar_loss_trains_scorer_through_straight_through(causal_factory):
    model = _model(causal_factory, threshold=0.0)
    ids = torch.randint(3, 64, (2, 10 + 4))  # omega_d + omega_r tokens
    with torch.no_grad():
        model.config.threshold = float(ar_scores(model, ids, 4).median())
    loss = ar_loss(model, ids).loss
    loss.backward()
    assert float(model.scorer.ffn[0].weight.grad.abs().sum()) > 0


def test_memory_stays_bounded_over_2000_generated_tokens(causal_factory):
    model = _model(causal_factory, recent_window=8, distant_window=32, max_nuggets=4)
    with torch.no_grad():
        ids = torch.randint(3, 64, (2, 200))
        model.config.threshold = threshold_for_ratio(calibration_scores(model, ids), 0.2)
    stream = Nugget2DStream(model)
    sizes, nbytes = [], []
    logits = stream.step(5)
    for _ in range(2000):
        logits = stream.step(int(logits.argmax()))
        sizes.append(stream.kv_positions)
        nbytes.append(stream.kv_bytes())
    assert stream.position == 2001 and sum(stream.selected) > 50
    # recent window (omega_r - 1) + capped distant nuggets + nuggets still in the window.
    bound = (8 - 1) + 4 + 8
    assert max(sizes) <= bound
    assert max(sizes[1000:]) <= max(sizes[:1000]) and max(nbytes[1000:]) <= max(nbytes[:1000])
    assert len(stream.nugget_positions) == stream.nuggets.length <= 4 + 8


def test_calibration_threshold_realises_the_ratio(causal_factory):
    model = _model(causal_factory, scorer_window=16)
    scores = calibration_scores(model, torch.randint(3, 64, (4, 50)))
    assert scores.shape == (200,) and torch.isfinite(scores).all()
    threshold = threshold_for_ratio(scores, 0.1)
    assert realised_ratio(scores, threshold) == pytest.approx(0.1, abs=0.01)


def test_baselines_share_the_stream_interface(causal_factory):
    model = _model(causal_factory, recent_window=8, distant_window=20, max_nuggets=None, ratio=0.25)
    ids = torch.randint(3, 64, (60,))
    full = FullStream(model)
    nll_full = stream_nll(full, ids)
    with torch.no_grad():
        reference = model.lm_forward(input_ids=ids[None]).logits[0, :-1].log_softmax(-1)
    # Full without a window is the plain LM (adapters off).
    expected = -reference.gather(1, ids[1:, None])[:, 0]
    torch.testing.assert_close(nll_full, expected)
    assert full.kv_positions == 59
    windowed = FullStream(model, window=8)
    nll_windowed = stream_nll(windowed, ids)
    assert windowed.kv_positions == 7
    # Full at a window reads the last 8 tokens as an LM given only them (encoded from
    # position 0, first token kept as the sink), not a rolling cache of evicted context
    for t in (2, 7, 30, 58):
        window = ids[max(0, t + 1 - 8) : t + 1]
        with torch.no_grad():
            last = model.lm_forward(input_ids=window[None]).logits[0, -1].log_softmax(-1)
        torch.testing.assert_close(nll_windowed[t], -last[ids[t + 1]])
    # the same windows in batches (left-padded, one pass for many tokens): the same NLLs
    for batch_size, start, adapter in ((7, 1, None), (64, 5, None), (3, 2, "decoder")):
        stream = stream_nll(FullStream(model, window=8, adapter=adapter), ids, start)
        torch.testing.assert_close(window_nll(model, ids, 8, adapter, start, batch_size), stream)
    comp = CompressiveStream(model)
    nll_comp = stream_nll(comp, ids)
    # 52 tokens left the 8-token window: 13 chunks of 4, of which ceil(20 / 4) = 5 kept.
    assert comp.chunk == 4 and comp.memory.length == 5 and comp.kv_positions == 7 + 5
    assert nll_comp.shape == nll_full.shape and torch.isfinite(nll_comp).all()
    # A first chunk pooled from one token is that token's key (rotary undone and redone).
    one = CompressiveStream(model, ratio=1.0)
    stream_nll(one, ids[:12])
    assert one.memory.length == 4
    ref = FullStream(model, adapter="decoder")
    stream_nll(ref, ids[:12])
    assert ref.recent.length == 11
    for layer in range(2):
        torch.testing.assert_close(one.memory.keys[layer], ref.recent.keys[layer][:, :, :4])
        torch.testing.assert_close(one.memory.values[layer], ref.recent.values[layer][:, :, :4])


@pytest.mark.parametrize("make_stream", [
    lambda m: Nugget2DStream(m), lambda m: FullStream(m, window=6), lambda m: CompressiveStream(m),
], ids=["nugget2d", "full", "compressive"])
def test_stream_generate_is_greedy_stepping(causal_factory, make_stream):
    model = _model(causal_factory)
    with torch.no_grad():
        model.config.threshold = threshold_for_ratio(calibration_scores(model, torch.randint(3, 64, (2, 40))), 0.25)
    prompt = torch.randint(3, 64, (7,))
    generated = make_stream(model).generate(prompt, max_new_tokens=12)
    manual, stream = [], make_stream(model)
    with torch.no_grad():
        for token in prompt.tolist():
            logits = stream.step(token)
        for _ in range(12):
            manual.append(int(logits.argmax()))
            logits = stream.step(manual[-1])
    assert generated.tolist() == manual
    eos = manual[2]
    stopped = make_stream(model).generate(prompt, max_new_tokens=12, eos_token_id=eos)
    assert stopped.tolist() == manual[: manual.index(eos) + 1]  # stops right after the first EOS


@pytest.mark.parametrize(
    ("family", "impl", "overrides", "ratio"),
    [
        ("llama", "sdpa", {}, 0.25),  # distant window 6 -> 2 slots kept; cap 2
        ("qwen2", "eager", {"distant_window": None, "max_nuggets": None}, 0.34),  # every slot, chunks of 3
        ("mistral", "sdpa", {"max_nuggets": 1}, 0.5),  # GQA heads; cap 1 slot
    ],
)
def test_parallel_compressive_forward_equals_the_stream(causal_factory, family, impl, overrides, ratio):
    """The Compressive baseline's training pass computes, for every position at once,
    the logits `CompressiveStream` gives token by token (same windows, chunks, slot cap
    and pooled rotary keys), with theta routed, so a trained baseline decodes what it
    was trained as."""
    from nugget_core.nugget2d import CompressiveLayout, compressive_forward

    model = _model(causal_factory, family, impl, **overrides)
    ids = torch.randint(3, 64, (2, 37), generator=torch.Generator().manual_seed(5))
    with torch.no_grad():
        parallel = compressive_forward(model, ids, ratio=ratio).logits
    for row in range(2):
        stream = CompressiveStream(model, ratio=ratio)
        incremental = torch.stack([stream.step(t) for t in ids[row].tolist()])
        assert stream.memory.length > 0
        torch.testing.assert_close(incremental, parallel[row], atol=2e-5, rtol=1e-4)
    layout = CompressiveLayout.from_config(model.config, ratio)
    mask = layout.mask(37, "cpu")
    assert mask.shape == (37, 37 + layout.slots(37))
    # the pooled memory changes the prediction: not the windowed LM alone
    windowed = torch.cat([mask[:, :37], torch.zeros_like(mask[:, 37:])], dim=1)
    assert not torch.equal(mask, windowed)


def test_compressive_layout_mask_by_hand():
    """Window 3, chunks of 2, at most 2 slots: position 6 sees tokens 4..6 and the slots
    of chunks [0, 2) and [2, 4) (positions <= 6 - 3 = 3 have left); position 8 sees
    chunks 1 and 2 only (chunk 0 dropped by the cap)."""
    from nugget_core.nugget2d import CompressiveLayout

    mask = CompressiveLayout(chunk=2, window=3, max_slots=2).mask(10, "cpu")
    assert mask.shape == (10, 10 + 3)  # slots: (10 - 3) // 2
    assert mask[6, :10].nonzero().flatten().tolist() == [4, 5, 6]
    assert mask[6, 10:].tolist() == [True, True, False]
    assert mask[5, 10:].tolist() == [True, False, False]  # chunk [2, 4) still has token 3 in the window
    assert mask[8, 10:].tolist() == [False, True, True]
    assert not mask[:4, 10:].any()
