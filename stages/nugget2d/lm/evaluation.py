"""What an evaluation recipe returns (`stages.nugget2d.lm.qa`, `stages.nugget2d.lm.summarization`,
`stages.nugget2d.lm.language_modelling`): the table and its per-example rows, before anything
is written or logged. The stage publishes both (`stages.evaluation.publish`); a notebook reads them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from stages.artifacts.evaluate import EvalTable


@dataclass(frozen=True)
class Evaluation:
    """An evaluation's table (rows with their n and uncertainty, notes, stand-in label) and
    one dict per example and system, in the order ``examples.jsonl`` holds them."""

    table: EvalTable
    examples: list[dict[str, Any]] = field(default_factory=list)
