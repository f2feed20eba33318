"""Competence floors: what a trivial reference reaches on the same data.

A finding about what a model does is only judged where the models do the task at all. Each
evaluation computes, on the very examples it scores, the number a system that does not do the
task reaches (`Floor`), and the report treats a system at or beyond its floor as not doing the
task (`stages.report.findings`: where every system a finding compares is, the verdict is "not
measurable at this scale"). The floors, per task (docs/report.md):

- reconstruction (BLEU): the larger of `RECONSTRUCTION_BLEU` and the BLEU of the best constant
  output (`best_constant`: one of the references, output for every input;
  `stages.evaluation.task_floors.reconstruction_floor`);
- language modelling (perplexity): an interpolated Kneser-Ney n-gram model fitted on the training
  split (`stages.common.ngram`), on the same tokens;
- ranking (MRR, recall@k): a random ranking's expectation (`random_mrr`);
- classification (accuracy): the majority class of the training labels;
- QA (accuracy): the no-document system's accuracy on the same questions;
- summarisation (ROUGE): a lead-k summary's (the first k sentences of the document;
  `stages.evaluation.task_floors.lead_floor`).

A model whose loss does not change when given another document's compressed input ignores that
input (`stages.artifacts.trainer_state.InputUse`): it is below the floor whatever its numbers.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

# Below BLEU 10 a text is no reconstruction of its input: the conventional reading of BLEU (e.g. Google
# Cloud's AutoML guide: "< 10: almost useless"), and far below the paper's > 99 (Nugget §5.1) and 98 (Nugget2D §4)
RECONSTRUCTION_BLEU = 10.0
BEST_CONSTANT_CANDIDATES = 100  # references tried as the constant output (a seeded sample of them)
BEST_CONSTANT_SEED = 0


@dataclass(frozen=True)
class Floor:
    """A metric's competence floor on one evaluation's data: ``value``, which side of it is
    better (``higher_is_better``), and what reaches it (``what``, shown in the report)."""

    value: float
    higher_is_better: bool
    what: str

    def reached_by(self, value: float) -> bool:
        """Whether ``value`` is strictly on the better side of the floor (a system that does the task)."""
        if not math.isfinite(value):
            return False
        return value > self.value if self.higher_is_better else value < self.value

    def describe(self) -> str:
        return f"{'>' if self.higher_is_better else '<'} {self.value:.4g} ({self.what})"

    def to_json(self) -> dict[str, Any]:
        return {"value": self.value, "higher_is_better": self.higher_is_better, "what": self.what}

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> Floor:
        """The floor `to_json` wrote; a `ValueError` naming the malformed field."""
        for key, kind in (("value", (int, float)), ("higher_is_better", bool), ("what", str)):
            if not isinstance(raw.get(key), kind):
                raise ValueError(f"floor: field {key!r} is malformed: {raw.get(key)!r}")
        return cls(float(raw["value"]), bool(raw["higher_is_better"]), str(raw["what"]))


def best_constant(references: Sequence[str], score: Callable[[Sequence[str], Sequence[str]], float],
                  candidates: int = BEST_CONSTANT_CANDIDATES, seed: int = BEST_CONSTANT_SEED) -> tuple[float, str]:
    """The best corpus ``score(hypotheses, references)`` of one constant output: each of (a seeded
    sample of ``candidates``) ``references`` output for every input. Returns (score, the output)."""
    import numpy as np

    if not references:
        raise ValueError("best_constant: no references")
    pool = list(dict.fromkeys(references))
    if len(pool) > candidates:
        picked = np.random.default_rng(seed).choice(len(pool), candidates, replace=False)
        pool = [pool[i] for i in sorted(picked)]
    scored = [(score([c] * len(references), references), c) for c in pool]
    return max(scored, key=lambda sc: sc[0])


def random_mrr(candidates: int) -> float:
    """The expected reciprocal rank (x 100) of the positive under a uniformly random ranking of
    ``candidates``: (1 / m) sum_k 1 / k."""
    if candidates < 1:
        raise ValueError(f"random_mrr: candidates={candidates} must be >= 1")
    return 100.0 * sum(1.0 / k for k in range(1, candidates + 1)) / candidates


def majority_floor(train_labels: Sequence[Any], test_labels: Sequence[Any]) -> Floor:
    """The accuracy (%) on ``test_labels`` of always answering the most common training label."""
    from collections import Counter

    if not train_labels or not test_labels:
        raise ValueError("majority_floor: no labels")
    label, _ = Counter(train_labels).most_common(1)[0]
    accuracy = 100.0 * sum(t == label for t in test_labels) / len(test_labels)
    return Floor(accuracy, True, f"always the majority training label {label!r}")
