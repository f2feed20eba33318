"""How a system's generations are scored in the QA and summarisation evaluations
(Nugget2D §6.2-6.3): the one scoring procedure of the QA and summarisation recipes
(`stages.nugget2d.lm.qa`, `stages.nugget2d.lm.summarization`), which the ``eval_qa`` and
``eval_summarization`` stages and the ``nugget eval`` command call.

Plain functions of the generations, their records, the document lengths and (QA) the typed
``eval.qa`` section: no Ray, MLflow or stage context, so a notebook or a test calls them as
they are. Each returns a `Scores`: the metrics the table row shows (quality first, then the
context ratio and the decoding cost of `stages.nugget2d.lm.cost`) with their n, their
uncertainty, and one row per example for ``examples.jsonl``.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from stages.common.intervals import hits_interval, stderr
from stages.evaluation.rouge import SUMMARY_ROUGE_TYPES, rouge_mean, rouge_per_example
from stages.nugget2d.config import QAEval
from stages.nugget2d.lm.cost import mean_cost
from stages.nugget2d.lm.normalize import contains_answer, gold_answers
from stages.nugget2d.lm.prompted import Generation

QA_QUALITY = ("accuracy",)


@dataclass(frozen=True)
class Scores:
    """One system's scores on ``n`` records."""

    metrics: dict[str, float]  # quality metrics first, then context_ratio and the decoding cost
    quality: tuple[str, ...]  # the task's own metrics among ``metrics`` (accuracy; ROUGE-1/2/L/Lsum)
    n: int
    interval: dict[str, tuple[float, float]] = field(default_factory=dict)  # a proportion's Wilson 95%
    stderr: dict[str, float] = field(default_factory=dict)  # a mean's standard error
    examples: list[dict[str, Any]] = field(default_factory=list)  # per record, in record order

    @property
    def hits(self) -> int:
        """QA: how many records were answered correctly."""
        if self.quality != QA_QUALITY:
            raise ValueError(f"hits: only QA scores count correct answers, these are {list(self.quality)}")
        return sum(bool(e["correct"]) for e in self.examples)


def _check(gens: Sequence[Generation], records: Sequence[dict[str, Any]], doc_tokens: Sequence[int]) -> None:
    if not records:
        raise ValueError("no records to score")
    if not len(gens) == len(records) == len(doc_tokens):
        raise ValueError(f"{len(gens)} generations for {len(records)} records and {len(doc_tokens)} document lengths")


def _context_ratio(gens: Sequence[Generation], doc_tokens: Sequence[int]) -> float:
    """Mean share of the document's tokens whose states the decoder keeps."""
    return statistics.fmean(g.context_states / n for g, n in zip(gens, doc_tokens, strict=True))


def score_qa(gens: Sequence[Generation], records: Sequence[dict[str, Any]], doc_tokens: Sequence[int],
             section: QAEval) -> Scores:
    """QA accuracy (%): an answer is correct when its appendix-D normal form contains a gold
    answer's, under ``section.match`` (`stages.nugget2d.lm.normalize`); with its Wilson 95%
    interval. ``doc_tokens``: each record's document length in the subwords the systems read."""
    _check(gens, records, doc_tokens)
    correct = [contains_answer(g.text, gold_answers(r), section.match) for g, r in zip(gens, records, strict=True)]
    metrics = {"accuracy": 100 * statistics.fmean(correct), "context_ratio": _context_ratio(gens, doc_tokens),
               **mean_cost([g.cost for g in gens])}
    examples = [{"id": r["id"], "output": g.text, "answer": r["answer"], "correct": ok,
                 "context_states": g.context_states, "doc_tokens": n, **g.cost.as_dict()}
                for g, r, ok, n in zip(gens, records, correct, doc_tokens, strict=True)]
    interval = hits_interval(correct)
    return Scores(metrics, QA_QUALITY, len(records), {"accuracy": interval} if interval else {}, examples=examples)


def score_summarization(gens: Sequence[Generation], records: Sequence[dict[str, Any]],
                        doc_tokens: Sequence[int]) -> Scores:
    """ROUGE-1/2/L and ROUGE-Lsum F1 x 100 with stemming against each record's ``answer``
    (`stages.evaluation.rouge`), averaged over records, with standard errors."""
    _check(gens, records, doc_tokens)
    per = rouge_per_example([g.text for g in gens], [r["answer"] for r in records], SUMMARY_ROUGE_TYPES)
    metrics = {**rouge_mean(per), "context_ratio": _context_ratio(gens, doc_tokens), **mean_cost([g.cost for g in gens])}
    errors = {t: se for t in SUMMARY_ROUGE_TYPES if (se := stderr([s[t] for s in per])) is not None}
    examples = [{"id": r["id"], "output": g.text, "reference": r["answer"], **scores,
                 "context_states": g.context_states, **g.cost.as_dict()}
                for g, r, scores in zip(gens, records, per, strict=True)]
    return Scores(metrics, SUMMARY_ROUGE_TYPES, len(records), stderr=errors, examples=examples)
