"""ROUGE wrapper: equal to rouge-score's own scorer (stemming on) and to hand counts."""

from __future__ import annotations

import pytest
from rouge_score import rouge_scorer

from stages.evaluation.rouge import rouge_mean, rouge_per_example

PREDICTIONS = ["The cats were sitting on the mat.", "Police arrested two men in Sydney on Monday", ""]
REFERENCES = ["A cat sat on the mat", "Two men were arrested by police in Sydney", "Fires burn near Goulburn"]


def test_equals_rouge_score_with_stemming():
    ours = rouge_per_example(PREDICTIONS, REFERENCES)
    scorer = rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL"], use_stemmer=True)
    for mine, pred, ref in zip(ours, PREDICTIONS, REFERENCES, strict=True):
        theirs = scorer.score(ref, pred)
        for t in ("rouge1", "rouge2", "rougeL"):
            assert mine[t] == pytest.approx(100 * theirs[t].fmeasure)
    mean = rouge_mean(ours)
    assert mean["rouge1"] == pytest.approx(sum(e["rouge1"] for e in ours) / 3)


def test_hand_counted_values():
    # "the cat sat" vs "the cat ran": 2 of 3 unigrams, 1 of 2 bigrams, LCS 2 of 3
    [s] = rouge_per_example(["the cat ran"], ["the cat sat"])
    assert s["rouge1"] == pytest.approx(200 / 3)
    assert s["rouge2"] == pytest.approx(50.0)
    assert s["rougeL"] == pytest.approx(200 / 3)
    # stemming: "cats" matches "cat"
    [t] = rouge_per_example(["cats"], ["cat"])
    assert t["rouge1"] == pytest.approx(100.0)


def test_length_mismatch_is_an_error():
    with pytest.raises(ValueError, match="predictions"):
        rouge_per_example(["a"], [])
