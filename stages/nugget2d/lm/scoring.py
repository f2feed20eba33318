"""How a system's generations are scored in the QA and summarisation evaluations
(Nugget2D §6.2-6.3): the one scoring procedure of the QA and summarisation recipes
(`stages.nugget2d.lm.qa`, `stages.nugget2d.lm.summarization`), which the ``eval_qa`` and
``eval_summarization`` stages and the ``nugget eval`` command call.

Plain functions of the generations, their records, the document lengths and (QA) the typed
``eval.qa`` section: no Ray, MLflow or stage context, so a notebook or a test calls them as
they are. Each returns a `Scores`: the metrics the table row shows (quality first, then the
context ratio and the decoding cost of `stages.nugget2d.lm.cost`) with their n, their
uncertainty, the per-unit statistics of each quality metric (`UnitSample`: what the report
resamples, and pairs between two systems scored on the same records), and one row per example for
``examples.jsonl``.

Units. Summarisation: the article (one record, one reference summary). QA: the document the
question is asked about: the questions on one document share the system's one reading of it (one
compression, one KV press), so they are not independent; every question's own document is its unit
where no two share one (the offline stand-in: one cloze per passage), and then the Wilson interval
of a proportion of independent questions is the accuracy's; where documents hold several questions
(SQuAD: ~5 per paragraph) the interval is the bootstrap one over documents.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from stages.common.intervals import hits_interval
from stages.common.resampling import UnitSample
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
    interval: dict[str, tuple[float, float]] = field(default_factory=dict)  # 95%: Wilson's, or over the units
    examples: list[dict[str, Any]] = field(default_factory=list)  # per record, in record order
    units: dict[str, UnitSample] = field(default_factory=dict)  # per quality metric, its per-unit statistics

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


QA_UNIT = "document"  # the document a question is asked about (see the module's docstring)
SUMMARY_UNIT = "article"


def question_documents(records: Sequence[dict[str, Any]]) -> list[str]:
    """Per QA record, the id of its document: the id of the first record asking about the same
    document text (the records of one SQuAD paragraph share its text)."""
    if bad := [r.get("id") for r in records if not isinstance(r.get("document"), str)]:
        raise ValueError(f"QA records {bad[:5]} have no field 'document' (a string): the unit of their accuracy")
    first: dict[str, str] = {}
    return [first.setdefault(r["document"], str(r["id"])) for r in records]


def score_qa(gens: Sequence[Generation], records: Sequence[dict[str, Any]], doc_tokens: Sequence[int],
             section: QAEval) -> Scores:
    """QA accuracy (%): an answer is correct when its appendix-D normal form contains a gold
    answer's, under ``section.match`` (`stages.nugget2d.lm.normalize`); with its `UnitSample` over
    the questions' documents (`question_documents`) and its 95% interval: Wilson's where every
    document holds one question, else the bootstrap one over documents. ``doc_tokens``: each
    record's document length in the subwords the systems read."""
    _check(gens, records, doc_tokens)
    correct = [contains_answer(g.text, gold_answers(r), section.match) for g, r in zip(gens, records, strict=True)]
    metrics = {"accuracy": 100 * statistics.fmean(correct), "context_ratio": _context_ratio(gens, doc_tokens),
               **mean_cost([g.cost for g in gens])}
    examples = [{"id": r["id"], "output": g.text, "answer": r["answer"], "correct": ok,
                 "context_states": g.context_states, "doc_tokens": n, **g.cost.as_dict()}
                for g, r, ok, n in zip(gens, records, correct, doc_tokens, strict=True)]
    units = UnitSample.of(QA_UNIT, "ratio", question_documents(records), [[100.0 * ok, 1.0] for ok in correct])
    interval = hits_interval(correct) if units.n == len(records) else units.interval()
    return Scores(metrics, QA_QUALITY, len(records), {"accuracy": interval} if interval else {}, examples=examples,
                  units={"accuracy": units})


def score_summarization(gens: Sequence[Generation], records: Sequence[dict[str, Any]],
                        doc_tokens: Sequence[int]) -> Scores:
    """ROUGE-1/2/L and ROUGE-Lsum F1 x 100 with stemming against each record's ``answer``
    (`stages.evaluation.rouge`), averaged over records (articles), each with its `UnitSample` over
    articles and its 95% bootstrap interval over them (none from fewer than `MIN_UNITS`)."""
    _check(gens, records, doc_tokens)
    per = rouge_per_example([g.text for g in gens], [r["answer"] for r in records], SUMMARY_ROUGE_TYPES)
    metrics = {**rouge_mean(per), "context_ratio": _context_ratio(gens, doc_tokens), **mean_cost([g.cost for g in gens])}
    units = article_units(per, [str(r["id"]) for r in records])
    examples = [{"id": r["id"], "output": g.text, "reference": r["answer"], **scores,
                 "context_states": g.context_states, **g.cost.as_dict()}
                for g, r, scores in zip(gens, records, per, strict=True)]
    return Scores(metrics, SUMMARY_ROUGE_TYPES, len(records), examples=examples, units=units,
                  interval={t: b for t, u in units.items() if (b := u.interval()) is not None})


def article_units(per_article: Sequence[dict[str, float]], ids: Sequence[str]) -> dict[str, UnitSample]:
    """Per ROUGE type (`SUMMARY_ROUGE_TYPES`), its `UnitSample` over articles (``[score, 1]`` per
    article: the mean's sufficient statistics) from `rouge_per_example`'s scores of the articles ``ids``."""
    return {t: UnitSample.of(SUMMARY_UNIT, "ratio", ids, [[s[t], 1.0] for s in per_article])
            for t in SUMMARY_ROUGE_TYPES}
