"""ROUGE-1/2/L of generated summaries (Nugget2D §6.3): ``rouge-score`` with stemming,
per-example F1, averaged over examples and reported on the 0-100 scale."""

from __future__ import annotations

from collections.abc import Sequence

ROUGE_TYPES = ("rouge1", "rouge2", "rougeL")


def rouge_per_example(predictions: Sequence[str], references: Sequence[str]) -> list[dict[str, float]]:
    """``[{rouge1, rouge2, rougeL}]`` F1 x 100 per (prediction, reference) pair."""
    from rouge_score import rouge_scorer

    if len(predictions) != len(references):
        raise ValueError(f"{len(predictions)} predictions but {len(references)} references")
    scorer = rouge_scorer.RougeScorer(list(ROUGE_TYPES), use_stemmer=True)
    out = []
    for pred, ref in zip(predictions, references, strict=True):
        scores = scorer.score(ref, pred)  # rouge-score's order: (target, prediction)
        out.append({t: 100.0 * scores[t].fmeasure for t in ROUGE_TYPES})
    return out


def rouge_mean(per_example: Sequence[dict[str, float]]) -> dict[str, float]:
    if not per_example:
        raise ValueError("ROUGE of no examples is undefined")
    return {t: sum(e[t] for e in per_example) / len(per_example) for t in ROUGE_TYPES}
