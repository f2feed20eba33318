"""ROUGE-1/2/L of generated summaries (Nugget2D §6.3): ``rouge-score`` with stemming,
per-example F1, averaged over examples and reported on the 0-100 scale."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from functools import cache, lru_cache
from typing import Any

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


@cache
def _tokenizer() -> Any:
    from rouge_score import tokenizers

    return tokenizers.DefaultTokenizer(use_stemmer=True)  # what `rouge_per_example`'s scorer tokenises with


@lru_cache(maxsize=1 << 16)
def _tokens(text: str) -> tuple[str, ...]:
    return tuple(_tokenizer().tokenize(text))


@lru_cache(maxsize=1 << 16)
def _ngrams(text: str, n: int) -> Counter[tuple[str, ...]]:
    tokens = _tokens(text)
    return Counter(zip(*(tokens[i:] for i in range(n)), strict=False))


def _f1(overlap: int, predicted: int, target: int) -> float:
    """rouge-score's F1 (x 100) of ``overlap`` units among ``predicted`` and ``target`` ones."""
    p, r = overlap / max(predicted, 1), overlap / max(target, 1)
    return 100.0 * 2 * p * r / (p + r) if p + r > 0 else 0.0


def _lcs_length(masks: dict[str, int], width: int, tokens: Sequence[str]) -> int:
    """The length of the longest common subsequence of ``tokens`` and a sequence of ``width``
    tokens given as ``masks`` (token -> bit set of its positions): the bit-parallel algorithm
    (Hyyrö 2004), one big-integer step per token instead of rouge-score's table of all pairs."""
    v = (1 << width) - 1
    for t in tokens:
        u = v & masks.get(t, 0)
        v = (v + u) | (v - u)
    return width - bin(v & ((1 << width) - 1)).count("1")


def constant_rouge(output: str, references: Sequence[str]) -> dict[str, float]:
    """The mean over ``references`` of the ROUGE-1/2/L F1 (x 100) of ``output`` against each:
    what `rouge_mean(rouge_per_example([output] * n, references))` gives, computed from tokens
    read once per text (rouge-score's own tokenizer and stemmer) and a bit-parallel LCS, so trying
    every constant output a competence floor considers on thousands of references takes seconds
    (`stages.evaluation.task_floors.constant_rouge_floors`), not the hours of rouge-score's
    per-pair tokenising and quadratic LCS table."""
    if not references:
        raise ValueError("ROUGE of no references is undefined")
    out = _tokens(output)
    grams = {n: _ngrams(output, n) for n in (1, 2)}
    masks: dict[str, int] = {}
    for i, t in enumerate(out):
        masks[t] = masks.get(t, 0) | (1 << i)
    sums = dict.fromkeys(ROUGE_TYPES, 0.0)
    for ref in references:
        tokens = _tokens(ref)
        for n in (1, 2):
            target = _ngrams(ref, n)
            overlap = sum(min(c, target[g]) for g, c in grams[n].items() if g in target)
            sums[f"rouge{n}"] += _f1(overlap, max(len(out) - n + 1, 0), max(len(tokens) - n + 1, 0))
        if out and tokens:
            sums["rougeL"] += _f1(_lcs_length(masks, len(out), tokens), len(out), len(tokens))
    return {t: v / len(references) for t, v in sums.items()}
