"""Metrics against hand computations and against the sacrebleu command line."""

from __future__ import annotations

import math
import subprocess
import sys

import pytest
import torch

from stages.evaluation.metrics import (
    bleu_statistics,
    corpus_bleu,
    cosine,
    mean_maxsim,
    mrr,
    reciprocal_rank,
)


def test_mean_maxsim_on_hand_computed_vectors():
    # query vectors: e1 and (e1+e2)/sqrt2 ; doc vectors: e2 and e1+e3 (unnormalised)
    q = torch.tensor([[2.0, 0.0, 0.0], [1.0, 1.0, 0.0]])
    d = torch.tensor([[0.0, 3.0, 0.0], [1.0, 0.0, 1.0]])
    # cos(q1, d1) = 0, cos(q1, d2) = 1/sqrt2 -> max 1/sqrt2
    # cos(q2, d1) = 1/sqrt2, cos(q2, d2) = 1/2 -> max 1/sqrt2
    assert mean_maxsim(q, d) == pytest.approx(1 / math.sqrt(2), abs=1e-6)
    # asymmetric: from the doc side, d1 -> max(0, 1/sqrt2), d2 -> max(1/sqrt2, 1/2)
    assert mean_maxsim(d, q) == pytest.approx(1 / math.sqrt(2), abs=1e-6)
    # one query vector, identical doc vector among others: exactly 1
    assert mean_maxsim(q[:1], torch.cat([d, q[:1] * 5])) == pytest.approx(1.0, abs=1e-6)
    # a mean, not a sum: three query vectors, maxima 1, 0 and 0.6
    q3 = torch.tensor([[1.0, 0.0], [0.0, 1.0], [0.6, 0.8]])
    d3 = torch.tensor([[1.0, 0.0], [0.0, -1.0]])
    assert mean_maxsim(q3, d3) == pytest.approx((1.0 + 0.0 + 0.6) / 3, abs=1e-6)


def test_cosine_single_vector():
    sims = cosine(torch.tensor([1.0, 0.0]), torch.tensor([[2.0, 0.0], [1.0, 1.0], [-1.0, 0.0]]))
    torch.testing.assert_close(sims, torch.tensor([1.0, 1 / math.sqrt(2), -1.0]))


def test_mrr_on_hand_built_ranking():
    rankings = [
        ([0.9, 0.1, 0.3], 0),  # answer first: 1
        ([0.2, 0.8, 0.5], 2),  # answer second: 1/2
        ([0.1, 0.2, 0.3, 0.4], 0),  # answer last of 4: 1/4
    ]
    assert mrr(rankings) == pytest.approx(100 * (1 + 0.5 + 0.25) / 3)
    # ties rank the answer after its equals: a constant scorer gets the worst rank
    assert reciprocal_rank([0.5, 0.5, 0.5], 1) == pytest.approx(1 / 3)
    with pytest.raises(ValueError):
        mrr([])


HYPS = [
    "the cat sat on the mat .",
    "a quick brown fox jumps over a lazy dog",
    "nuggets are selected tokens , mostly punctuation .",
    "completely different words here",
]
REFS = [
    "the cat sat on the mat .",
    "the quick brown fox jumped over the lazy dog",
    "nuggets are the selected tokens : mostly punctuation and conjunctions .",
    "nothing in common at all",
]


def test_bleu_equals_sacrebleu_cli(tmp_path):
    (tmp_path / "hyp.txt").write_text("\n".join(HYPS) + "\n")
    (tmp_path / "ref.txt").write_text("\n".join(REFS) + "\n")
    out = subprocess.run(
        [sys.executable, "-m", "sacrebleu", str(tmp_path / "ref.txt"), "-i", str(tmp_path / "hyp.txt"),
         "-b", "-w", "6"],
        check=True, capture_output=True, text=True,
    )
    cli = float(out.stdout.strip())
    ours = corpus_bleu(HYPS, REFS)
    assert 0.0 < cli < 100.0
    assert ours == pytest.approx(cli, abs=1e-5)
    # micro-averaged (corpus statistics pooled), not the mean of sentence BLEUs
    import sacrebleu

    sentence_mean = sum(sacrebleu.sentence_bleu(h, [r]).score for h, r in zip(HYPS, REFS, strict=True)) / len(HYPS)
    assert ours != pytest.approx(sentence_mean, abs=0.5)
    assert corpus_bleu(REFS, REFS) == pytest.approx(100.0)


def test_bleu_interval_is_a_bootstrap_around_sacrebleus_corpus_bleu():
    """The point estimate is sacrebleu's corpus BLEU (from the summed per-document statistics); its
    bootstrap interval over documents holds it, narrows as documents are added, is the same on every call
    (seeded), and is none below `MIN_UNITS` documents (the percentile interval's coverage falls short there)."""
    import sacrebleu

    from stages.common.resampling import UnitSample

    def sample(hyps: list[str], refs: list[str], tokenize: str = "13a") -> UnitSample:
        return UnitSample.of("document", "bleu", range(len(hyps)), bleu_statistics(hyps, refs, tokenize))

    zh = (["我们 今天 去 公园", "他 很 高兴"] * 10, ["我们 明天 去 公园", "他 很 生气"] * 10, "zh")
    for hyps, refs, tokenize in ((HYPS * 5, REFS * 5, "13a"), zh):
        bleu = sample(hyps, refs, tokenize)
        low, high = bleu.interval()
        assert bleu.value() == pytest.approx(sacrebleu.corpus_bleu(hyps, [refs], tokenize=tokenize).score)
        assert bleu.value() == pytest.approx(corpus_bleu(hyps, refs, tokenize))
        assert low <= bleu.value() <= high and low < high
    few, many = sample(HYPS * 5, REFS * 5).interval(), sample(HYPS * 50, REFS * 50).interval()
    assert few[1] - few[0] > 2 * (many[1] - many[0]) > 0
    assert sample(HYPS * 5, REFS * 5).interval() == few
    assert sample(HYPS[:1], REFS[:1]).interval() is None


def test_the_share_counts_every_tokenizer_spelling():
    """mBART-50's SentencePiece writes 'the' as '▁the'; it was not counted."""
    from collections import Counter

    from stages.evaluation.analysis import TokenStats

    stats = TokenStats()
    assert stats.word_share(Counter({"▁the": 2, "▁cat": 2}), "the") == 50.0
    assert stats.word_share(Counter({"Ġthe": 1, "the": 1, "Ġcat": 2}), "the") == 50.0
