"""Metrics of the Nugget evaluations: corpus BLEU, cosine, mean-MaxSim and MRR.

Pure functions on plain tensors / lists so that tests can check them against hand
computations and against the ``sacrebleu`` command line.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch


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
