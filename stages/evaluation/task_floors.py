"""The competence floors that need a metric's implementation (`stages.common.floors` has the
floor type and the rest): reconstruction BLEU, restoration ROUGE (a text from its embedding) and
summarisation ROUGE on an evaluation's own examples."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from stages.common.floors import RECONSTRUCTION_BLEU, Floor, best_constant
from stages.evaluation.metrics import corpus_bleu

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def _shown(output: str) -> str:
    """A constant output as a floor names it (its first 37 characters and '...' when longer)."""
    return output if len(output) <= 40 else output[:37] + "..."


def reconstruction_floor(references: Sequence[str], tokenize: str = "13a") -> Floor:
    """The BLEU floor of a reconstruction task on ``references``: the larger of
    `RECONSTRUCTION_BLEU` and the corpus BLEU of the best constant output (`best_constant`)."""
    best, output = best_constant(references, lambda h, r: corpus_bleu(h, r, tokenize))
    if best >= RECONSTRUCTION_BLEU:
        return Floor(best, True, f"BLEU of the best constant output, {_shown(output)!r} for every input")
    return Floor(RECONSTRUCTION_BLEU, True,
                 f"BLEU {RECONSTRUCTION_BLEU:g}, above the best constant output's {best:.2f}")


def lead(document: str, sentences: int) -> str:
    """The first ``sentences`` sentences of ``document`` (split after . ! ? and whitespace)."""
    return " ".join(_SENTENCE_END.split(document.strip())[:sentences])


def lead_floor(documents: Sequence[str], references: Sequence[str], sentences: int = 3,
               metric: str = "rougeL") -> Floor:
    """The mean ROUGE (``metric``, F1 x 100) of the lead-``sentences`` summary of each document
    against its reference: the summarisation floor (lead-3 is CNN/DM's standard baseline)."""
    from stages.evaluation.rouge import rouge_per_example

    if len(documents) != len(references) or not documents:
        raise ValueError(f"lead_floor: {len(documents)} documents for {len(references)} references")
    scores = rouge_per_example([lead(d, sentences) for d in documents], list(references), (metric,))  # rougeLsum too
    return Floor(sum(s[metric] for s in scores) / len(scores), True, f"lead-{sentences} summary")


def constant_rouge_floors(references: Sequence[str]) -> dict[str, Floor]:
    """Per ROUGE type (`stages.evaluation.rouge.ROUGE_TYPES`), the mean ROUGE F1 (x 100) on
    ``references`` of the best constant output (`best_constant`, each type's own best): the floor
    of a task scored by ROUGE against its input (restoring a text from its embedding)."""
    from stages.evaluation.rouge import ROUGE_TYPES, constant_rouge

    scored: dict[str, dict[str, float]] = {}  # constant -> its ROUGE: every type from one pass

    def score(metric: str) -> Callable[[Sequence[str], Sequence[str]], float]:
        def of(hypotheses: Sequence[str], refs: Sequence[str]) -> float:
            constant = hypotheses[0]
            if constant not in scored:
                scored[constant] = constant_rouge(constant, refs)
            return scored[constant][metric]
        return of

    floors = {}
    for metric in ROUGE_TYPES:
        best, output = best_constant(references, score(metric))
        floors[metric] = Floor(best, True, f"mean {metric} of the best constant output, {_shown(output)!r} "
                                           "for every input")
    return floors
