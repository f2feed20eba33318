"""Training-free KV presses (StreamingLLM, SnapKV, key-norm) against hand-computed
selections, and their exactness limits: a press that keeps everything is Full."""

from __future__ import annotations

import pytest
import torch

from nugget_core.nugget2d import (
    FullStream,
    Nugget2DConfig,
    Nugget2DModel,
    PressConfig,
    PressStream,
    press_context,
)
from nugget_core.nugget2d.generation import generate_from_context
from nugget_core.nugget2d.kv import LayerKV
from nugget_core.nugget2d.presses import keep_indices, press_layer
from nugget_core.nuggets import nugget_counts

pytestmark = pytest.mark.usefixtures("one_thread")


def _model(causal_factory, impl: str = "sdpa", **config) -> Nugget2DModel:
    return Nugget2DModel(causal_factory(impl=impl), Nugget2DConfig(scorer_layer=1, lora_rank=4, **config)).eval()


def test_keep_indices_takes_the_best_per_row_and_head_in_text_order():
    scores = torch.tensor([[[0.1, 0.9, 0.5, 0.7, float("-inf")], [0.8, 0.1, 0.2, 0.3, float("-inf")]],
                           [[0.3, 0.2, 0.1, 0.0, 0.4], [0.0, 0.1, 0.2, 0.3, 0.4]]])
    indices, mask = keep_indices(scores, torch.tensor([2, 3]))
    assert mask.tolist() == [[1, 1, 0], [1, 1, 1]]
    assert indices.tolist() == [[[1, 3, 0], [0, 3, 0]], [[0, 1, 4], [2, 3, 4]]]


def test_streaming_llm_keeps_the_sinks_and_the_most_recent_tokens(causal_factory, doc_batch):
    model = _model(causal_factory)
    ids, mask = doc_batch["doc_ids"], doc_batch["doc_mask"]  # lengths 12 and 8
    with torch.no_grad():
        ctx = press_context(model, ids, mask, ratio=0.5, press="streaming_llm", config=PressConfig(sink_tokens=2))
        full = model.encode_full(ids, mask)
    # k = 6 and 4: sinks 0, 1, then the last 4 / 2 positions, on every layer and head
    expected = {0: [0, 1, 8, 9, 10, 11], 1: [0, 1, 6, 7]}
    assert ctx.counts.tolist() == [6, 4]
    for b, keep in expected.items():
        for layer in range(len(ctx.kv.keys)):
            torch.testing.assert_close(ctx.kv.keys[layer][b, :, : len(keep)], full.kv.keys[layer][b][:, keep])
            torch.testing.assert_close(ctx.kv.values[layer][b, :, : len(keep)], full.kv.values[layer][b][:, keep])
    assert ctx.positions[1, :4].tolist() == expected[1]


def test_streaming_llm_keeps_the_last_token_when_the_budget_is_within_the_sinks(causal_factory, doc_batch):
    model = _model(causal_factory)
    with torch.no_grad():
        ctx = press_context(model, doc_batch["doc_ids"], doc_batch["doc_mask"], ratio=0.2, press="streaming_llm")
    # k = 3 and 2 with 4 sinks: k - 1 sinks and the last token
    assert ctx.positions.tolist() == [[0, 1, 11], [0, 7, 0]]


def test_key_norm_keeps_the_smallest_keys_of_each_layer_and_head(causal_factory, doc_batch):
    model = _model(causal_factory)
    ids, mask = doc_batch["doc_ids"], doc_batch["doc_mask"]
    with torch.no_grad():
        ctx = press_context(model, ids, mask, ratio=0.25, press="key_norm")
        full = model.encode_full(ids, mask)
    counts = nugget_counts(mask, 0.25).tolist()
    chosen_differ = False
    for layer, keys in enumerate(full.kv.keys):
        for b, k in enumerate(counts):
            n = int(mask[b].sum())
            for h in range(keys.shape[1]):
                norms = keys[b, h, :n].norm(dim=-1)
                keep = sorted(norms.argsort()[:k].tolist())
                torch.testing.assert_close(ctx.kv.keys[layer][b, h, :k], keys[b, h, keep])
                chosen_differ |= keep != sorted(full.kv.keys[layer][b, 0, :n].norm(dim=-1).argsort()[:k].tolist())
    assert chosen_differ, "every head chose the same positions: the per-head selection is untested"


def _authors_avg_pool(x: torch.Tensor, kernel: int) -> torch.Tensor:
    """SnapKV's ``avg_pool1d(x, kernel, padding=kernel // 2, stride=1)`` over ``x [heads, m]``,
    written out: the sum of the ``kernel`` positions centred on each one, those outside
    ``x`` counting as zeros, divided by ``kernel`` (PyTorch's default count_include_pad)."""
    r, m = kernel // 2, x.shape[-1]
    out = torch.zeros_like(x)
    for p in range(m):
        out[:, p] = x[:, max(0, p - r) : min(m, p + r + 1)].sum(dim=-1) / kernel
    return out


def test_snapkv_pools_only_before_the_window_with_zero_padding_counted():
    """One row of 7 positions, window 2, kernel 3: positions 0-4 are pooled by themselves
    (the window's 9s never reach position 4), each sum divided by 3, padding too."""
    from nugget_core.nugget2d.presses import snapkv_scores

    attention = torch.tensor([[[3.0, 0.0, 0.0, 0.0, 0.6, 9.0, 9.0, 5.0]]])  # position 7: padding
    real = torch.tensor([[1, 1, 1, 1, 1, 1, 1, 0]])
    scores = snapkv_scores(attention, real, torch.tensor([7]), window=2, kernel=3)[0, 0]
    torch.testing.assert_close(scores[:5], torch.tensor([1.0, 1.0, 0.0, 0.2, 0.2]))
    assert scores[5] < scores[6] and scores[6] > 1e5 and scores[7] == float("-inf")  # window first, recent first
    # two rows of other lengths pool alike, each before its own window
    batch = torch.tensor([[[3.0, 0.0, 0.0, 0.0, 0.6, 9.0, 9.0, 5.0]], [[3.0, 0.0, 0.6, 9.0, 9.0, 5.0, 5.0, 5.0]]])
    real = torch.tensor([[1, 1, 1, 1, 1, 1, 1, 0], [1, 1, 1, 1, 1, 0, 0, 0]])
    both = snapkv_scores(batch, real, torch.tensor([7, 5]), window=2, kernel=3)
    torch.testing.assert_close(both[1, 0, :3], torch.tensor([1.0, 1.2, 0.2]))


def _snapkv_expected(causal_factory, ids, mask, window: int, kernel: int, counts: list[int]) -> list[list[list[list[int]]]]:
    """Per layer, row and KV head: the positions SnapKV keeps, from HF's eager attention
    probabilities (the reference computation)."""
    reference = causal_factory(impl="eager")
    with torch.no_grad():
        out = reference(input_ids=ids, attention_mask=mask, output_attentions=True)
    heads, kv_heads = reference.config.num_attention_heads, reference.config.num_key_value_heads
    expected = []
    for probs in out.attentions:  # [batch, heads, n, n]
        per_row = []
        for b, k in enumerate(counts):
            n = int(mask[b].sum())
            w = min(window, n)
            # the authors' update_kv: the window's attention to the positions before it only
            summed = probs[b, :, n - w : n, : n - w].sum(dim=1)  # [heads, n - w]
            grouped = summed.reshape(kv_heads, heads // kv_heads, n - w).mean(dim=1)
            pooled = _authors_avg_pool(grouped, kernel)
            rows = []
            for h in range(kv_heads):
                in_window = list(range(n - w, n))[::-1][:k]  # most recent first
                rest = pooled[h].argsort(descending=True).tolist()
                rows.append(sorted((in_window + rest)[:k]))
            per_row.append(rows)
        expected.append(per_row)
    return expected


@pytest.mark.parametrize("window", [3, 20])
def test_snapkv_keeps_the_window_and_what_it_attends_to_most(causal_factory, doc_batch, window):
    model = _model(causal_factory)
    ids, mask = doc_batch["doc_ids"], doc_batch["doc_mask"]
    config = PressConfig(window=window, kernel=3)
    with torch.no_grad():
        ctx = press_context(model, ids, mask, ratio=0.5, press="snapkv", config=config)
        full = model.encode_full(ids, mask)
    counts = nugget_counts(mask, 0.5).tolist()
    expected = _snapkv_expected(causal_factory, ids, mask, window, 3, counts)
    for layer, keys in enumerate(full.kv.keys):
        for b, k in enumerate(counts):
            for h in range(keys.shape[1]):
                torch.testing.assert_close(ctx.kv.keys[layer][b, h, :k], keys[b, h, expected[layer][b][h]])
    assert model.lm.config._attn_implementation == "sdpa"  # the probe is switched off again


@pytest.mark.parametrize("press", ["streaming_llm", "snapkv", "key_norm"])
def test_a_press_that_keeps_every_token_decodes_as_full(causal_factory, doc_batch, press):
    model = _model(causal_factory)
    ids, mask = doc_batch["doc_ids"], doc_batch["doc_mask"]
    prompt = doc_batch["prompt_ids"], doc_batch["prompt_mask"]
    with torch.no_grad():
        pressed = generate_from_context(model, press_context(model, ids, mask, 1.0, press), *prompt,
                                        max_new_tokens=6, adapter=None, cuda_graph=False)
        full = generate_from_context(model, model.encode_full(ids, mask), *prompt, max_new_tokens=6,
                                     adapter=None, cuda_graph=False)
    assert pressed.tokens.tolist() == full.tokens.tolist()


def test_unknown_press_and_bad_settings_are_refused(causal_factory, doc_batch):
    model = _model(causal_factory)
    with pytest.raises(ValueError, match="unknown KV press 'h2o'"):
        press_context(model, doc_batch["doc_ids"], doc_batch["doc_mask"], 0.5, "h2o")
    with pytest.raises(ValueError, match="kernel must be odd"):
        PressConfig(kernel=4)
    with pytest.raises(ValueError, match="unknown KV press 'snapkv'"):
        PressStream(_model(causal_factory, recent_window=4, max_nuggets=2), "snapkv")
    with pytest.raises(ValueError, match="max_nuggets must be set"):
        PressStream(_model(causal_factory, recent_window=4), "key_norm")


# --- PressStream ------------------------------------------------------------------------


def _stream_ids(n: int = 20) -> list[int]:
    return torch.randint(3, 64, (n,), generator=torch.Generator().manual_seed(3)).tolist()


def test_press_stream_with_room_for_every_token_is_the_full_lm(causal_factory):
    model = _model(causal_factory, recent_window=4, max_nuggets=100)
    press, full = PressStream(model, "key_norm"), FullStream(model)
    for token in _stream_ids():
        torch.testing.assert_close(press.step(token), full.step(token), atol=1e-5, rtol=1e-5)


def test_press_stream_streaming_llm_holds_the_sinks_and_the_last_tokens(causal_factory):
    model = _model(causal_factory, recent_window=4, max_nuggets=5)
    stream = PressStream(model, "streaming_llm", sink_tokens=2)
    ids = _stream_ids()
    for token in ids:
        stream.step(token)
    # after 20 tokens: recent = positions 17..19 (window 4 - 1), memory = sinks 0, 1 + 14, 15, 16
    for positions in stream.memory_positions:
        assert positions[0].tolist() == [[0, 1, 14, 15, 16]] * positions.shape[1]
    assert stream.kv_positions == 3 + 5
    # the same states a Full LM computed for those positions (computed once, then only kept)
    reference = FullStream(model, reencode=False)
    for token in ids:
        reference.step(token)
    torch.testing.assert_close(stream.memory.keys[0], reference.recent.keys[0][:, :, [0, 1, 14, 15, 16]])


class _Recording(PressStream):
    """Keeps a copy of every block that leaves the recent window (the states the press
    chose from, computed as the stream computed them)."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.seen = LayerKV([], [])

    def _evicted(self, evicted: LayerKV) -> None:
        self.seen = self.seen.cat(evicted)
        super()._evicted(evicted)


def test_press_stream_key_norm_keeps_the_smallest_keys_seen(causal_factory):
    model = _model(causal_factory, recent_window=3, max_nuggets=4)
    stream = _Recording(model, "key_norm")
    for token in _stream_ids():
        stream.step(token)
    assert stream.seen.length == 18  # every token but the recent window's 2
    for layer, keys in enumerate(stream.seen.keys):
        for h in range(keys.shape[1]):
            keep = sorted(keys[0, h].norm(dim=-1).argsort()[:4].tolist())
            assert stream.memory_positions[layer][0, h].tolist() == keep
            torch.testing.assert_close(stream.memory.keys[layer][0, h], keys[0, h, keep])


def test_press_layer_ranks_by_position_for_streaming_llm():
    keys = torch.randn(1, 2, 6, 4)
    positions = torch.tensor([[[0, 1, 5, 6, 7, 9], [0, 2, 3, 5, 8, 9]]])
    keep = press_layer("streaming_llm", keys, positions, budget=3, sink_tokens=1)
    assert keep.tolist() == [[[0, 4, 5], [0, 4, 5]]]
    # fewer slots than sinks: the very first tokens
    assert press_layer("streaming_llm", keys, positions, budget=2, sink_tokens=4).tolist() == [[[0, 1], [0, 1]]]
    assert LayerKV([keys], [keys]).gather_heads([keep]).keys[0].shape == (1, 2, 3, 4)
