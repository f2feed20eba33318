"""Selection: k = ceil(r * n) per sequence, padding never selected, text order, and the
rule-based selectors."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest
import torch

from nugget_core import (
    ChunkSelector,
    NuggetConfig,
    SentenceSelector,
    TopKSelector,
    get_nugget_model,
)
from nugget_core.nuggets import gather_tokens, nugget_counts, selection_to_indices


def _padded_mask(lengths: list[int], left: bool = False) -> torch.Tensor:
    n = max(lengths)
    mask = torch.zeros(len(lengths), n, dtype=torch.long)
    for row, length in enumerate(lengths):
        if left:
            mask[row, n - length :] = 1
        else:
            mask[row, :length] = 1
    return mask


def _expected_k(n: int, ratio: float) -> int:
    return min(max(math.ceil(Fraction(str(ratio)) * n), 1), n)


@pytest.mark.parametrize("ratio", [0.1, 0.25, 0.3, 0.5, 1.0])
def test_counts_are_ceil_r_n_with_exact_arithmetic(ratio: float) -> None:
    lengths = [30, 7, 1, 10, 20, 3]  # 0.1 * 30 is 3.0000000000000004 in floats
    k = nugget_counts(_padded_mask(lengths), ratio)
    assert k.tolist() == [_expected_k(n, ratio) for n in lengths]


@pytest.mark.parametrize("left", [False, True])
def test_topk_on_mixed_length_padded_batch(left: bool) -> None:
    lengths = [12, 5, 9, 1]
    mask = _padded_mask(lengths, left=left)
    # Padding gets the highest raw scores: it must still never be chosen.
    scores = torch.randn(mask.shape).masked_fill(mask.eq(0), 100.0)
    selected = TopKSelector()(scores, mask, 0.3)
    assert selected.sum(dim=1).tolist() == [_expected_k(n, 0.3) for n in lengths]
    assert not (selected & mask.eq(0)).any()
    for row in range(len(lengths)):
        real = mask[row].bool()
        k = int(selected[row].sum())
        best = scores[row].masked_fill(~real, float("-inf")).topk(k).indices
        assert set(best.tolist()) == set(selected[row].nonzero().flatten().tolist())


def test_indices_in_text_order_and_padded_result() -> None:
    selected = torch.tensor([[0, 1, 0, 1, 1], [1, 0, 0, 0, 0]], dtype=torch.bool)
    indices, mask = selection_to_indices(selected)
    assert indices.tolist() == [[1, 3, 4], [0, 0, 0]]
    assert mask.tolist() == [[1, 1, 1], [1, 0, 0]]
    values = torch.arange(10.0).view(2, 5)
    values[1, 0] = float("-inf")  # e.g. a padding score: must not turn into nan
    gathered = gather_tokens(values, indices, mask)
    assert gathered[0].tolist() == [1.0, 3.0, 4.0]
    assert gathered[1, 0] == float("-inf") and gathered[1, 1:].tolist() == [0.0, 0.0]


def test_model_encode_nuggets_per_sequence(model_factory, batch_factory) -> None:
    model = model_factory("bart")
    batch = batch_factory(model)  # lengths 9 and 6
    nugget_model = get_nugget_model(model, NuggetConfig(ratio=0.4, scorer_layer=1))
    nuggets = nugget_model.encode(batch["input_ids"], batch["attention_mask"])
    assert nuggets.counts.tolist() == [4, 3]  # ceil(3.6), ceil(2.4)
    assert nuggets.encoding.shape == (2, 4, 32)
    assert nuggets.mask.tolist() == [[1, 1, 1, 1], [1, 1, 1, 0]]
    assert (nuggets.indices[1, :3] < 6).all()  # never a pad position
    for row, k in enumerate(nuggets.counts.tolist()):
        real = nuggets.indices[row, :k]
        assert torch.all(real[1:] > real[:-1])  # text order
    assert nuggets.encoding[1, 3].abs().sum() == 0 and nuggets.scores[1, 3] == 0
    assert nuggets.scores.requires_grad


def test_chunk_selector_takes_last_punctuation_else_last_token() -> None:
    # n = 10, r = 0.3 -> 3 chunks: [0..2], [3..5], [6..9]
    mask = _padded_mask([10, 4])
    punct = torch.zeros_like(mask, dtype=torch.bool)
    punct[0, 1] = True  # chunk 0 -> position 1
    punct[0, 7] = punct[0, 8] = True  # chunk 2 -> the last of them, 8
    selected = ChunkSelector()(torch.zeros(mask.shape), mask, 0.3, punct)
    assert selected[0].nonzero().flatten().tolist() == [1, 5, 8]
    # n = 4 -> ceil(1.2) = 2 chunks [0, 1], [2, 3]; no punctuation -> last tokens
    assert selected[1].nonzero().flatten().tolist() == [1, 3]


def test_sentence_selector_uses_data_boundaries() -> None:
    mask = _padded_mask([8, 5])
    eos = torch.zeros_like(mask, dtype=torch.bool)
    eos[0, 3] = eos[0, 7] = True
    eos[1, 6] = True  # on padding: ignored -> falls back to the last real token
    selected = SentenceSelector()(torch.zeros(mask.shape), mask, 0.5, eos)
    assert selected[0].nonzero().flatten().tolist() == [3, 7]
    assert selected[1].nonzero().flatten().tolist() == [4]
    with pytest.raises(ValueError, match="boundary_mask"):
        SentenceSelector()(torch.zeros(mask.shape), mask, 0.5, None)


def test_rule_selector_behind_model_interface(model_factory, batch_factory) -> None:
    model = model_factory("bart")
    batch = batch_factory(model)
    config = NuggetConfig(ratio=0.5, scorer_layer=1, selector="sentence", feedback=False)
    nugget_model = get_nugget_model(model, config)
    boundary = torch.zeros_like(batch["input_ids"], dtype=torch.bool)
    boundary[0, 2] = boundary[0, 8] = boundary[1, 5] = True
    nuggets = nugget_model.encode(
        batch["input_ids"], batch["attention_mask"], boundary_mask=boundary
    )
    assert nuggets.indices.tolist() == [[2, 8], [5, 0]]
    assert torch.equal(nuggets.scores, torch.zeros(2, 2))
    out = nugget_model(**batch, boundary_mask=boundary)
    assert torch.isfinite(out.logits).all()
