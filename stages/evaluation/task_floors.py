"""The competence floors that need a metric's implementation (`stages.common.floors` has the
floor type and the rest): reconstruction BLEU and summarisation ROUGE on an evaluation's own
examples."""

from __future__ import annotations

import re
from collections.abc import Sequence

from stages.common.floors import RECONSTRUCTION_BLEU, Floor, best_constant
from stages.evaluation.metrics import corpus_bleu

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def reconstruction_floor(references: Sequence[str], tokenize: str = "13a") -> Floor:
    """The BLEU floor of a reconstruction task on ``references``: the larger of
    `RECONSTRUCTION_BLEU` and the corpus BLEU of the best constant output (`best_constant`)."""
    best, output = best_constant(references, lambda h, r: corpus_bleu(h, r, tokenize))
    if best >= RECONSTRUCTION_BLEU:
        shown = output if len(output) <= 40 else output[:37] + "..."
        return Floor(best, True, f"BLEU of the best constant output, {shown!r} for every input")
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
    scores = rouge_per_example([lead(d, sentences) for d in documents], list(references))
    return Floor(sum(s[metric] for s in scores) / len(scores), True, f"lead-{sentences} summary")
