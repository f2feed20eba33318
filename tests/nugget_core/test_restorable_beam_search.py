"""The RE beam search on a scripted decoder whose next-token distribution depends only on
the sequence's prefix (so every result can be worked out by hand)."""

from __future__ import annotations

import math

import pytest
import torch

from nugget_core.restorable.generate import beam_search

PAD, EOS, A, B, X, Y = 0, 1, 2, 3, 4, 5
VOCAB = 8
# Next-token probabilities after each prefix, per sequence of the batch; tokens not
# listed share a tiny remainder.
SCRIPT = {
    0: {(): {A: 0.55, B: 0.45}, (A,): {X: 0.4, Y: 0.35, EOS: 0.25}, (A, X): {EOS: 1.0}, (A, Y): {EOS: 1.0},
        (B,): {EOS: 0.9, X: 0.1}, (B, X): {EOS: 1.0}},
    1: {(): {X: 1.0}, (X,): {Y: 1.0}, (X, Y): {X: 1.0}, (X, Y, X): {Y: 1.0}, (X, Y, X, Y): {X: 1.0}},
}


class ScriptedDecoder:
    """`StepDecoder` over ``SCRIPT``: rows = batch * beams, each with its prefix."""

    def __init__(self, batch: list[int], num_beams: int) -> None:
        self.items = [item for item in batch for _ in range(num_beams)]
        self.prefixes: list[tuple[int, ...]] = [() for _ in self.items]

    def _logits(self) -> torch.Tensor:
        rows = []
        for item, prefix in zip(self.items, self.prefixes, strict=True):
            probs = [1e-6] * VOCAB
            for token, p in SCRIPT[item].get(prefix, {EOS: 1.0}).items():
                probs[token] = p
            rows.append([math.log(p) for p in probs])
        return torch.tensor(rows)

    def start(self) -> torch.Tensor:
        return self._logits()

    def step(self, tokens: torch.Tensor) -> torch.Tensor:
        self.prefixes = [prefix + (int(t),) for prefix, t in zip(self.prefixes, tokens, strict=True)]
        return self._logits()

    def reorder(self, rows: torch.Tensor) -> None:
        self.items = [self.items[r] for r in rows.tolist()]
        self.prefixes = [self.prefixes[r] for r in rows.tolist()]


def search(batch: list[int], num_beams: int, max_new_tokens: int = 10, **kwargs) -> list[list[int]]:
    out = beam_search(ScriptedDecoder(batch, num_beams), len(batch), num_beams, max_new_tokens, EOS, PAD, **kwargs)
    return out.tolist()


def test_greedy_is_argmax_until_eos_and_pads():
    # item 0: A (0.55) then X (0.4) then EOS; item 1 never ends: cut at max_new_tokens
    assert search([0, 1], num_beams=1, max_new_tokens=5) == [[A, X, EOS, PAD, PAD], [X, Y, X, Y, X]]


def test_beam_search_finds_the_better_short_hypothesis():
    # B EOS: log(0.45 * 0.9) / 2 = -0.452 beats greedy's A X EOS: log(0.55 * 0.4) / 3 = -0.505
    assert search([0], num_beams=2) == [[B, EOS]]
    assert search([0, 1], num_beams=2, max_new_tokens=4) == [[B, EOS, PAD, PAD], [X, Y, X, Y]]


def test_length_penalty_divides_by_length_to_that_power():
    # with length_penalty=2: B EOS -0.904 / 4 = -0.226 < A X EOS -1.514 / 9 = -0.168
    assert search([0], num_beams=2, length_penalty=2.0) == [[A, X, EOS]]


def test_early_stopping_off_runs_to_the_same_answer_here():
    assert search([0], num_beams=2, early_stopping=False) == [[B, EOS]]


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match="num_beams"):
        search([0], num_beams=0)
    with pytest.raises(ValueError, match="vocabulary"):
        search([0], num_beams=5)  # 2 * 5 candidates > 8 tokens
