"""Metrics of the Nugget evaluations: corpus BLEU (its per-document statistics are what
`stages.common.resampling` resamples for an interval), cosine, mean-MaxSim and MRR.

Pure functions on plain tensors / lists so that tests can check them against hand
computations and against the ``sacrebleu`` command line.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import torch

if TYPE_CHECKING:
    import numpy as np


def corpus_bleu(hypotheses: Sequence[str], references: Sequence[str], tokenize: str = "13a") -> float:
    """Micro-averaged corpus BLEU (sacrebleu defaults: exp smoothing; ``tokenize`` "13a",
    or "zh" for Chinese references), on the 0-100 scale; one reference per hypothesis
    (Nugget §5.1: the input document itself for AE)."""
    import sacrebleu

    if len(hypotheses) != len(references):
        raise ValueError(f"{len(hypotheses)} hypotheses but {len(references)} references")
    if not hypotheses:
        raise ValueError("corpus BLEU of an empty corpus is undefined")
    return float(sacrebleu.corpus_bleu(list(hypotheses), [list(references)], tokenize=tokenize).score)


def bleu_statistics(hypotheses: Sequence[str], references: Sequence[str], tokenize: str = "13a") -> list[list[int]]:
    """Per document, the sufficient statistics of sacrebleu's corpus BLEU (summed over the
    corpus they give it, `bleu_of_statistics`): hypothesis and reference length, then the
    matched and the hypothesis n-grams of each order (1-4); each document tokenised once."""
    from sacrebleu.metrics import BLEU

    if len(hypotheses) != len(references):
        raise ValueError(f"{len(hypotheses)} hypotheses but {len(references)} references")
    # effective_order only changes how a score is computed from the statistics (not used here): set so that
    # sentence_score does not warn once per document
    metric = BLEU(tokenize=tokenize, effective_order=True)
    return [[s.sys_len, s.ref_len, *s.counts, *s.totals]
            for s in (metric.sentence_score(h, [r]) for h, r in zip(hypotheses, references, strict=True))]


def sentence_scores(hypotheses: Sequence[str], references: Sequence[str], tokenize: str = "13a"
                    ) -> list[dict[str, float]]:
    """Per document (a sample's own scores, `stages.evaluation.samples`): sacrebleu's sentence
    ``bleu`` (exp smoothing, effective order, ``tokenize`` as `corpus_bleu`) and ``chrf``, both
    0-100. A corpus's BLEU is not their mean (`corpus_bleu`)."""
    from sacrebleu.metrics import BLEU, CHRF

    if len(hypotheses) != len(references):
        raise ValueError(f"{len(hypotheses)} hypotheses but {len(references)} references")
    bleu, chrf = BLEU(tokenize=tokenize, effective_order=True), CHRF()
    return [{"bleu": float(bleu.sentence_score(h, [r]).score), "chrf": float(chrf.sentence_score(h, [r]).score)}
            for h, r in zip(hypotheses, references, strict=True)]


def bleu_of_statistics(sums: Sequence[float] | np.ndarray) -> float:
    """Corpus BLEU (0-100, sacrebleu's exp smoothing, as `corpus_bleu`) from `bleu_statistics` summed
    over documents (a list, or the array a bootstrap resample sums to)."""
    from sacrebleu.metrics import BLEU

    order = (len(sums) - 2) // 2
    counts = [int(v) for v in sums]
    return float(BLEU.compute_bleu(counts[2 : 2 + order], counts[2 + order :], counts[0], counts[1],
                                   smooth_method="exp", max_ngram_order=order).score)


def bleu_tokenizer(references: Sequence[str]) -> str:
    """sacrebleu's "zh" tokenizer when the references contain CJK characters, else "13a"."""
    cjk = any("\u4e00" <= ch <= "\u9fff" for text in references for ch in text)
    return "zh" if cjk else "13a"


def cosine(query: torch.Tensor, docs: torch.Tensor) -> torch.Tensor:
    """Cosine similarity of one vector ``[d]`` with each row of ``docs [m, d]`` -> ``[m]``."""
    q = torch.nn.functional.normalize(query.float(), dim=-1)
    d = torch.nn.functional.normalize(docs.float(), dim=-1)
    return d @ q


def mean_maxsim(query: torch.Tensor, doc: torch.Tensor) -> float:
    """Nugget eq. (10): for each query vector the max cosine over the document's vectors,
    averaged over query vectors (a mean, not ColBERT's sum: vector counts vary).

    Args:
        query: ``[I, d]`` vectors of the query.
        doc: ``[J, d]`` vectors of the document.
    """
    if query.dim() != 2 or doc.dim() != 2 or not len(query) or not len(doc):
        raise ValueError(f"mean_maxsim needs non-empty [n, d] inputs, got {tuple(query.shape)}, {tuple(doc.shape)}")
    q = torch.nn.functional.normalize(query.float(), dim=-1)
    d = torch.nn.functional.normalize(doc.float(), dim=-1)
    return float((q @ d.T).max(dim=1).values.mean())


def reciprocal_rank(scores: Sequence[float], answer: int) -> float:
    """1 / rank of candidate ``answer`` when sorted by descending score. Ties count
    against the answer (it ranks after every candidate scoring the same), so a model
    giving all candidates one score cannot look good."""
    target = scores[answer]
    rank = 1 + sum(1 for i, s in enumerate(scores) if i != answer and s >= target)
    return 1.0 / rank


def mrr(rankings: Sequence[tuple[Sequence[float], int]]) -> float:
    """Mean reciprocal rank x 100 over ``(candidate scores, answer index)`` pairs."""
    if not rankings:
        raise ValueError("MRR of no tasks is undefined")
    return 100.0 * sum(reciprocal_rank(s, a) for s, a in rankings) / len(rankings)
