"""Word-level vs subword perplexity (product of subword probabilities per word)."""

from __future__ import annotations

import math

import pytest

from stages.evaluate.lm.perplexity import PerplexityCounts, segment_counts, word_ids


def test_word_ids_follow_leading_spaces_and_newlines():
    assert word_ids(["The", " c", "at", " sat", "\n", "On"]) == [0, 1, 1, 2, 3, 4]


def test_word_ppl_equals_subword_ppl_when_every_word_is_one_subword():
    texts = ["<ctx>", " the", " cat", " sat", " down"]
    nll = [1.0, 2.0, 0.5, 3.0]
    c = segment_counts(nll, texts, start=1)
    assert c.subwords == c.words == 4
    assert c.word_ppl == pytest.approx(c.subword_ppl)
    assert c.subword_ppl == pytest.approx(math.exp(6.5 / 4))


def test_word_ppl_is_larger_when_words_split():
    texts = ["<ctx>", " the", " c", "at", " s", "at"]
    nll = [1.0, 2.0, 0.5, 3.0, 0.2]
    c = segment_counts(nll, texts, start=1)
    assert (c.subwords, c.words) == (5, 3)
    assert c.subword_ppl == pytest.approx(math.exp(6.7 / 5))
    assert c.word_ppl == pytest.approx(math.exp(6.7 / 3))  # product of each word's subword probabilities
    assert c.word_ppl > c.subword_ppl


def test_oov_words_and_words_begun_in_the_context_are_left_out():
    texts = [" fir", "st", " <", "unk", ">", " end"]
    nll = [0.7, 5.0, 5.0, 5.0, 1.0]  # predicts "st" (word begun in context), " <unk>" x3, " end"
    c = segment_counts(nll, texts, start=1, oov_token="<unk>")
    assert c.oov_words == 1
    assert (c.subwords, c.words) == (2, 1)  # "st" counts as a subword, not as a word
    assert c.subword_nll == pytest.approx(1.7) and c.word_nll == pytest.approx(1.0)
    kept = segment_counts(nll, texts, start=1)  # a corpus without an OOV marker keeps it
    assert kept.oov_words == 0 and kept.words == 2


def test_counts_add_up_over_segments():
    a = segment_counts([1.0], ["x", " y"], start=1)
    b = segment_counts([3.0], ["x", " z"], start=1)
    total = PerplexityCounts()
    total.add(a)
    total.add(b)
    assert total.subword_ppl == pytest.approx(math.exp(2.0))


def test_misaligned_nll_is_rejected():
    with pytest.raises(ValueError, match="does not fit"):
        segment_counts([1.0, 2.0], ["a", " b"], start=1)
