"""ROUGE of generated texts: ``rouge-score`` with stemming, per-example F1, averaged over
examples and reported on the 0-100 scale.

- ``rouge1``, ``rouge2``: unigram / bigram overlap;
- ``rougeL``: the longest common subsequence of the two texts taken whole (one sequence each);
- ``rougeLsum`` (`SUMMARY_ROUGE_TYPES`, the summarisation evaluation): the summary-level LCS of
  Lin (2004): each reference sentence's LCS with the prediction's sentences (their union), the
  sentences one per line (`sentence_lines`). This is what CNN/DailyMail papers report as
  "ROUGE-L" (ROUGE-1.5.5 / pyrouge on sentence-split summaries, Hugging Face's summarisation
  scripts' ``rougeLsum``), so Nugget2D table 4's RL column is compared with it; ``rougeL`` is
  shown beside it.

The RE restoration (RE tables 2, 3, 8) keeps `ROUGE_TYPES`: one restored text against its
original, not a multi-sentence summary.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from functools import cache, lru_cache
from typing import Any

ROUGE_TYPES = ("rouge1", "rouge2", "rougeL")
SUMMARY_ROUGE_TYPES = (*ROUGE_TYPES, "rougeLsum")


def sentence_lines(text: str) -> str:
    """``text`` with one sentence per line, as ``rougeLsum`` reads it: its own lines (CNN/DailyMail
    highlights are one per line) each cut into sentences (`stages.corpora.text.split_sentences`,
    rule-based: NLTK's Punkt parameters, which summarisation scripts use, are data that is not
    downloaded)."""
    from stages.corpora.text import split_sentences

    return "\n".join(s for line in text.splitlines() for s in split_sentences(line))


def rouge_per_example(predictions: Sequence[str], references: Sequence[str],
                      types: Sequence[str] = ROUGE_TYPES) -> list[dict[str, float]]:
    """``[{type: F1 x 100}]`` per (prediction, reference) pair, for each of ``types``
    (`ROUGE_TYPES` or `SUMMARY_ROUGE_TYPES`)."""
    from rouge_score import rouge_scorer

    if len(predictions) != len(references):
        raise ValueError(f"{len(predictions)} predictions but {len(references)} references")
    whole = [t for t in types if t != "rougeLsum"]
    scorer = rouge_scorer.RougeScorer(whole, use_stemmer=True)
    summary = rouge_scorer.RougeScorer(["rougeLsum"], use_stemmer=True) if "rougeLsum" in types else None
    out = []
    for pred, ref in zip(predictions, references, strict=True):
        scores = scorer.score(ref, pred)  # rouge-score's order: (target, prediction)
        row = {t: 100.0 * scores[t].fmeasure for t in whole}
        if summary is not None:  # the texts a sentence per line
            row["rougeLsum"] = 100.0 * summary.score(sentence_lines(ref), sentence_lines(pred))["rougeLsum"].fmeasure
        out.append({t: row[t] for t in types})
    return out


def rouge_mean(per_example: Sequence[dict[str, float]]) -> dict[str, float]:
    """The mean over examples of each type the examples hold."""
    if not per_example:
        raise ValueError("ROUGE of no examples is undefined")
    return {t: sum(e[t] for e in per_example) / len(per_example) for t in per_example[0]}


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
