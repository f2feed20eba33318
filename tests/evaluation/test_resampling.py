"""The report's resampling (`stages.common.resampling`), the vectorised BLEU it resamples
(`stages.common.bleu_statistic`), the n-gram floor (`stages.common.ngram`) and the floors."""

from __future__ import annotations

import math

import numpy as np
import pytest

from stages.common.bleu_statistic import bleu_from_sums
from stages.common.floors import Floor, best_constant, majority_floor, random_mrr
from stages.common.ngram import KneserNeyTrigram
from stages.common.resampling import MIN_UNITS, UnitSample, difference, pairable
from stages.evaluation.metrics import bleu_of_statistics, bleu_statistics, corpus_bleu


def test_vectorised_bleu_is_sacrebleus_on_random_statistics():
    rng = np.random.default_rng(0)
    rows = []
    for _ in range(2000):
        total = rng.integers(0, 30, 4)
        correct = np.minimum(rng.integers(0, 30, 4), total) * rng.integers(0, 2, 4)
        rows.append([int(rng.integers(0, 40)), int(rng.integers(1, 40)), *correct, *total])
    ours = bleu_from_sums(np.array(rows))
    assert ours.shape == (2000,)
    for row, value in zip(rows, ours, strict=True):
        assert value == pytest.approx(bleu_of_statistics(row), abs=1e-9)


def test_a_bleu_sample_is_the_corpus_bleu():
    hyps = ["the cat sat on the mat", "a dog ran", "one two three four five", "hello there world"]
    refs = ["the cat sat on a mat", "a dog ran away", "one two three four five", "hello world"]
    sample = UnitSample.of("document", "bleu", range(4), bleu_statistics(hyps, refs))
    assert sample.value() == pytest.approx(corpus_bleu(hyps, refs))


def test_rows_of_one_unit_are_summed_into_one():
    # a document scored at two lengths is one unit: its rows sum, and n counts documents
    sample = UnitSample.of("document", "ratio", ["d1", "d2", "d1", "d2"], [[1, 2], [3, 4], [5, 6], [7, 8]])
    assert sample.n == 2
    assert sample.ids == ("d1", "d2")
    assert sample.stats.tolist() == [[6, 8], [10, 12]]
    assert sample.value() == pytest.approx(16 / 20)


def test_no_interval_below_the_minimum_of_units():
    few = UnitSample.of("document", "ratio", range(MIN_UNITS - 1), [[1.0 + i, 2.0] for i in range(MIN_UNITS - 1)])
    enough = UnitSample.of("document", "ratio", range(MIN_UNITS), [[1.0 + i, 2.0] for i in range(MIN_UNITS)])
    assert few.interval() is None
    assert difference(few, few) is None
    low, high = enough.interval()
    assert low < enough.value() < high


def test_the_interval_holds_the_value_and_is_a_pure_function():
    rng = np.random.default_rng(3)
    sample = UnitSample.of("article", "exp_ratio", range(40), np.c_[rng.gamma(2, 20, 40), rng.integers(10, 30, 40)])
    assert sample.interval() == sample.interval()
    low, high = sample.interval()
    assert low <= sample.value() <= high


def test_pairing_cancels_shared_variation():
    rng = np.random.default_rng(1)
    n = 60
    hardness = rng.gamma(1.0, 10.0, n)  # per-document difficulty both systems share
    a = UnitSample.of("document", "ratio", range(n), np.c_[hardness + 1.0 + rng.normal(0, 0.2, n), np.ones(n)])
    b = UnitSample.of("document", "ratio", range(n), np.c_[hardness + rng.normal(0, 0.2, n), np.ones(n)])
    other_docs = UnitSample.of("document", "ratio", range(100, 100 + n), b.stats)
    paired, unpaired = difference(a, b), difference(a, other_docs)
    assert pairable(a, b) and not pairable(a, other_docs)
    assert paired.paired and not unpaired.paired
    assert paired.value == pytest.approx(unpaired.value)
    assert paired.low > 0  # shown paired ...
    assert unpaired.low < 0  # ... not told from noise without the pairing
    assert paired.high - paired.low < (unpaired.high - unpaired.low) / 5


def test_a_unit_sample_round_trips_and_names_a_bad_field():
    sample = UnitSample.of("question", "ratio", ["q1", "q2"], [[100.0, 1.0], [0.0, 1.0]])
    back = UnitSample.from_json(sample.to_json())
    assert back.ids == sample.ids and back.unit == "question" and back.stats.tolist() == sample.stats.tolist()
    with pytest.raises(ValueError, match="'statistic'"):
        UnitSample.from_json({**sample.to_json(), "statistic": 3})
    with pytest.raises(ValueError, match="unknown statistic"):
        UnitSample.of("question", "median", ["q1"], [[1.0]])


def test_kneser_ney_distributions_sum_to_one():
    rng = np.random.default_rng(0)
    vocab = 12
    model = KneserNeyTrigram.fit([rng.integers(0, 8, rng.integers(2, 30)) for _ in range(50)], vocab)
    for u, v in ((1, 2), (0, 0), (9, 10), (3, 11)):  # seen and unseen contexts
        assert sum(math.exp(-model.token_nll([u, v, w])[2]) for w in range(vocab)) == pytest.approx(1.0)
    for v in (1, 9):
        assert sum(math.exp(-model.token_nll([v, w])[1]) for w in range(vocab)) == pytest.approx(1.0)
    assert sum(math.exp(-model.token_nll([w])[0]) for w in range(vocab)) == pytest.approx(1.0)


def test_kneser_ney_learns_a_repeated_pattern():
    model = KneserNeyTrigram.fit([[1, 2, 3, 4] * 20], vocab_size=50)
    nll = model.token_nll([1, 2, 3, 4, 1, 2])
    assert np.exp(-nll[2:]).min() > 0.9  # a trigram seen 20 times: nearly certain
    with pytest.raises(ValueError, match="vocabulary of 50"):
        model.token_nll([60])


def test_floors():
    assert random_mrr(1) == 100.0
    assert random_mrr(20) == pytest.approx(100 * sum(1 / k for k in range(1, 21)) / 20)
    floor = majority_floor(["a", "a", "b"], ["a", "b", "b", "b"])
    assert floor.value == 25.0 and floor.higher_is_better
    assert Floor(10.0, True, "x").reached_by(10.5) and not Floor(10.0, True, "x").reached_by(10.0)
    assert Floor(50.0, False, "trigram").reached_by(40.0) and not Floor(50.0, False, "x").reached_by(math.nan)
    refs = ["the cat sat", "the cat sat down", "a b c"]
    score, output = best_constant(refs, lambda h, r: corpus_bleu(h, r))
    assert output in refs and score == max(corpus_bleu([c] * 3, refs) for c in refs)
    assert Floor.from_json(floor.to_json()) == floor
