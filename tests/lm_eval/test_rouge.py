"""ROUGE wrapper: equal to rouge-score's own scorer (stemming on) and to hand counts."""

from __future__ import annotations

import pytest
from rouge_score import rouge_scorer

from stages.evaluation.rouge import (
    SUMMARY_ROUGE_TYPES,
    rouge_mean,
    rouge_per_example,
    sentence_lines,
)

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


def test_summaries_also_get_rouge_lsum_over_newline_split_sentences():
    """CNN/DailyMail's ROUGE-L is summary-level (ROUGE-Lsum): each reference sentence's LCS with the
    prediction's sentences, one sentence per line; ROUGE-L of the whole texts is lower where the
    prediction orders the content differently."""
    prediction = "The cats were sitting on the mat. Then a dog came."
    reference = "A dog came.\nA cat sat on the mat"
    assert sentence_lines(prediction) == "The cats were sitting on the mat.\nThen a dog came."
    assert sentence_lines(reference) == "A dog came.\nA cat sat on the mat"
    (ours,) = rouge_per_example([prediction], [reference], SUMMARY_ROUGE_TYPES)
    scorer = rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL", "rougeLsum"], use_stemmer=True)
    theirs = scorer.score(sentence_lines(reference), sentence_lines(prediction))
    assert ours == pytest.approx({t: 100 * theirs[t].fmeasure for t in SUMMARY_ROUGE_TYPES})
    assert ours["rougeLsum"] == pytest.approx(70.0) and ours["rougeL"] == pytest.approx(40.0)
    # the other types are those of the texts as given (rouge-score's tokens ignore line breaks)
    (plain,) = rouge_per_example([prediction], [reference])
    assert set(plain) == {"rouge1", "rouge2", "rougeL"} and all(plain[t] == pytest.approx(ours[t]) for t in plain)
    assert rouge_mean([ours, ours]) == pytest.approx(ours)
