"""The Nugget LM (Nugget §6.2): windows, history, memory kinds, HF equivalence, persistence."""

from __future__ import annotations

import pytest
import torch
from conftest import make_model
from transformers.modeling_outputs import BaseModelOutput

from nugget_core import NuggetConfig, NuggetLM, NuggetLMConfig, get_nugget_model
from nugget_core.baselines import BottleneckConfig, get_bottleneck_model
from nugget_core.nugget import Window, collate_windows, history_spans, windows
from nugget_core.nugget.lm import chunk_mean


def test_training_windows_tile_the_document():
    assert windows(0, 10, 4) == [Window(0, 0, 4, 0), Window(0, 4, 8, 4), Window(0, 8, 10, 8)]


def test_strided_windows_score_every_token_once_with_context():
    ws = windows(3, 11, 4, stride=2)
    assert [(w.start, w.end, w.score_from) for w in ws] == [(0, 4, 0), (2, 6, 4), (4, 8, 6), (6, 10, 8), (8, 11, 10)]
    scored = [t for w in ws for t in range(w.score_from, w.end)]
    assert scored == list(range(11))
    assert all(w.score_from - w.start >= 2 for w in ws[1:])


def test_windows_reject_a_stride_that_does_not_divide_the_segment():
    with pytest.raises(ValueError, match="stride=3 must divide segment=4"):
        windows(0, 10, 4, stride=3)


def test_history_spans_are_the_segments_before_the_window_oldest_first():
    assert history_spans(8, 4, 2) == [(0, 4), (4, 8)]
    assert history_spans(8, 4, 4) == [(0, 4), (4, 8)]  # the document has two segments before 8
    assert history_spans(6, 4, 2) == [(0, 2), (2, 6)]  # a strided window: the oldest is partial
    assert history_spans(0, 4, 3) == []


def test_collate_shifts_the_window_masks_unscored_tokens_and_right_aligns_history():
    docs = [list(range(10, 30))]
    batch = [Window(0, 0, 4, 0), Window(0, 6, 10, 8)]
    out = collate_windows(docs, batch, segment=4, history=2, decoder_start_id=2, pad_id=1,
                          wrap_segment=lambda s: [0, *s, 2])
    assert out["decoder_input_ids"].tolist() == [[2, 10, 11, 12], [2, 16, 17, 18]]
    assert out["labels"].tolist() == [[10, 11, 12, 13], [-100, -100, 18, 19]]
    assert out["history_mask"][0].sum().item() == 0  # no history before token 0
    assert out["history_ids"][1].tolist() == [[0, 10, 11, 2, 1, 1], [0, 12, 13, 14, 15, 2]]
    assert out["history_mask"][1].tolist() == [[1, 1, 1, 1, 0, 0], [1] * 6]


def test_chunk_mean_pools_real_tokens_per_chunk():
    hidden = torch.arange(12, dtype=torch.float32).view(1, 6, 2)
    mask = torch.tensor([[1, 1, 1, 0, 0, 0]])
    pooled, keep = chunk_mean(hidden, mask, 2)
    assert keep.tolist() == [[1, 1, 0]]
    assert torch.equal(pooled[0, 0], torch.tensor([1.0, 2.0]))
    assert torch.equal(pooled[0, 1], torch.tensor([4.0, 5.0]))  # the one real token of chunk 2
    assert torch.equal(pooled[0, 2], torch.zeros(2))


def test_chunk_mean_leaves_the_wrapping_special_tokens_out():
    hidden = torch.arange(16, dtype=torch.float32).view(2, 8, 1)
    mask = torch.tensor([[1] * 8, [1] * 5 + [0] * 3])  # <s> 6 tokens </s>; <s> 3 tokens </s> + padding
    pooled, keep = chunk_mean(hidden, mask, 3, wrap=(1, 1))
    assert keep.tolist() == [[1, 1, 0], [1, 0, 0]]  # ceil(6 / 3) and ceil(3 / 3) vectors
    assert pooled[0, :2, 0].tolist() == [2.0, 5.0]  # positions 1-3 and 4-6
    assert pooled[1, 0, 0].item() == 10.0  # positions 1-3 of row 1 (8 + 1 .. 8 + 3)


def test_compressive_memory_holds_s_over_chunk_vectors_per_segment():
    """Nugget §6.2: 512 tokens into 32 vectors. A segment of s = 8 tokens wrapped in
    <s> ... </s> pooled by 4 gives 2 vectors, not ceil(10 / 4) = 3."""
    lm = NuggetLM(make_model("bart"), NuggetLMConfig(memory="chunk_mean", chunk_tokens=4, segment_wrap=(1, 1))).eval()
    docs = [list(range(3, 43))]
    batch = collate_windows(docs, [Window(0, 32, 40, 32)], 8, 4, decoder_start_id=2, pad_id=1,
                            wrap_segment=lambda s: [0, *s, 2])
    with torch.no_grad():
        memory = lm.memory(batch["history_ids"], batch["history_mask"])
    assert int(memory.mask.sum()) == 4 * 8 // 4
    with pytest.raises(ValueError, match="segment_wrap"):
        NuggetLMConfig(memory="chunk_mean", segment_wrap=(1,))


def _batch(history: int, seed: int = 0) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    docs = [torch.randint(3, 60, (24,), generator=g).tolist() for _ in range(2)]
    return collate_windows(docs, [Window(0, 8, 16, 8), Window(1, 16, 24, 16)], 8, history,
                           decoder_start_id=2, pad_id=1, wrap_segment=lambda s: [0, *s, 2])


@pytest.mark.parametrize("memory", ["nugget", "mean", "chunk_mean", "none"])
def test_every_memory_kind_trains_and_round_trips(memory, tmp_path):
    base = make_model("bart")
    model = {"nugget": lambda: get_nugget_model(base, NuggetConfig(ratio=0.25, scorer_layer=1)),
             "mean": lambda: get_bottleneck_model(base, BottleneckConfig()),
             }.get(memory, lambda: base)()
    lm = NuggetLM(model, NuggetLMConfig(memory=memory, ratio=0.25, chunk_tokens=4)).eval()
    batch = _batch(history=2)
    out = lm(**batch)
    assert torch.isfinite(out.loss)
    out.loss.backward()
    if memory == "nugget":  # the residual reaches the scorer through the LM loss
        assert any(p.grad is not None and p.grad.abs().sum() > 0 for p in lm.model.scorer.parameters())
    lm.save_pretrained(tmp_path)
    again = NuggetLM.from_pretrained(tmp_path).eval()
    assert torch.allclose(again(**batch).logits, out.logits, atol=1e-5)


def test_no_memory_equals_the_hf_model_over_one_masked_zero_slot():
    base = make_model("bart")
    lm = NuggetLM(base, NuggetLMConfig(memory="none")).eval()
    batch = _batch(history=2)
    rows = batch["decoder_input_ids"].shape[0]
    ref = base(decoder_input_ids=batch["decoder_input_ids"], attention_mask=torch.zeros(rows, 1, dtype=torch.long),
               encoder_outputs=BaseModelOutput(last_hidden_state=torch.zeros(rows, 1, 32)))
    assert torch.equal(lm(**batch).logits, ref.logits)  # history ignored
    assert torch.equal(lm(decoder_input_ids=batch["decoder_input_ids"]).logits, ref.logits)


def test_nugget_memory_is_the_concatenated_per_segment_nuggets():
    """Row 1 has two full history segments: its memory is each segment's own `encode`."""
    model = get_nugget_model(make_model("bart"), NuggetConfig(ratio=0.25, scorer_layer=1))
    lm = NuggetLM(model, NuggetLMConfig(memory="nugget")).eval()
    batch = _batch(history=2)
    with torch.no_grad():
        memory = lm.memory(batch["history_ids"], batch["history_mask"])
        seg = [model.encode(batch["history_ids"][1, j : j + 1], batch["history_mask"][1, j : j + 1]) for j in (0, 1)]
    k = seg[0].encoding.shape[1]
    assert memory.mask[1].tolist() == [1] * (2 * k)
    for j in (0, 1):
        assert torch.allclose(memory.encoding[1, j * k : (j + 1) * k], seg[j].encoding[0], atol=1e-6)
        assert torch.allclose(memory.scores[1, j * k : (j + 1) * k], seg[j].scores[0], atol=1e-6)
    assert memory.mask[0, :k].sum() == 0 and memory.mask[0, k:].sum() == k  # row 0: one segment, right-aligned


def test_history_changes_the_nugget_lm_prediction_but_not_the_plain_lm():
    base = make_model("bart")
    for lm, changes in ((NuggetLM(get_nugget_model(base, NuggetConfig(ratio=0.5, scorer_layer=1)),
                                  NuggetLMConfig()), True), (NuggetLM(make_model("bart"), NuggetLMConfig(memory="none")), False)):
        lm.eval()
        a, b = _batch(history=1), _batch(history=1)
        b["history_ids"] = torch.where(b["history_mask"].bool(), (b["history_ids"] + 7) % 57 + 3, b["history_ids"])
        assert (not torch.allclose(lm(**a).logits, lm(**b).logits)) is changes


def test_a_gating_bottleneck_cannot_be_a_memory():
    model = get_bottleneck_model(make_model("bart"), BottleneckConfig(decoder="gating"))
    with pytest.raises(ValueError, match="gating decoder reads exactly one vector"):
        NuggetLM(model, NuggetLMConfig(memory="mean"))
    with pytest.raises(TypeError, match="needs a NuggetModel"):
        NuggetLM(make_model("bart"), NuggetLMConfig(memory="nugget"))


def test_special_tokens_are_read_from_the_tokenizer():
    from nugget_core import train_bpe_tokenizer
    from nugget_core.nugget import SpecialTokens

    tok = train_bpe_tokenizer(["the cat sat on the mat"] * 10, vocab_size=300)
    special = SpecialTokens.of(tok)
    assert (special.prefix, special.suffix) == ((tok.bos_token_id,), (tok.eos_token_id,))
    ids = tok("the cat", add_special_tokens=False)["input_ids"]
    assert special(ids) == tok("the cat")["input_ids"]
