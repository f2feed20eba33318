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

from collections.abc import Sequence

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
