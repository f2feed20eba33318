"""What an evaluation recipe returns (`stages.nugget2d.lm.qa`, `stages.nugget2d.lm.summarization`,
`stages.nugget2d.lm.language_modelling`): the table and its per-example rows, before anything
is written or logged. The stage publishes both (`stages.evaluation.publish`); a notebook reads them.
And why a row's model ignores its input (`ignores_input`), from the training summary of its fit."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from stages.artifacts.evaluate import EvalTable
from stages.artifacts.trainer_state import TrainingSummary


@dataclass(frozen=True)
class Evaluation:
    """An evaluation's table (rows with their n and uncertainty, notes, stand-in label) and
    one dict per example and system, in the order ``examples.jsonl`` holds them."""

    table: EvalTable
    examples: list[dict[str, Any]] = field(default_factory=list)


def ignores_input(summary: TrainingSummary) -> str:
    """Why the model ``summary`` describes ignores its compressed input (`InputUse.reason`; "" where
    it reads it, or where its fit did not measure it): an evaluation row of that model carries it
    (`TableRow.ignores_input`)."""
    return summary.input_use.reason() if summary.input_use is not None else ""
