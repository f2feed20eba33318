"""The report's tables of evaluations no paper table names: each registered stage writing
an `EvalTable` that `stages.report.contract.ReportInputs` does not read by name reaches the
report through its collected field (``other_evaluations``), and is shown after the papers'
tables as the table renders itself (`EvalTable.to_markdown` / ``to_html``), under a context
line naming the stage and its artifact. No published column: no paper value is known for
it (a paper table with published values is a table builder of its own, `stages.report.tables`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from stages.artifacts.evaluate import EvalTable, StoredEvalTable
from stages.report.tables import examples, measured_by, metric_n


@dataclass(frozen=True)
class EvaluationTable:
    """The table of evaluation stage ``stage`` as the report shows it."""

    stage: str
    table: EvalTable
    context: str  # profile and the artifact that measured it
    examples: list[Path]  # its per-example outputs, where the stage wrote them

    @property
    def heading(self) -> str:
        stand_in = self.table.stand_in
        return f"{self.table.title} [stand-in data: {stand_in}]" if stand_in else self.table.title

    @property
    def source(self) -> str:
        return f"none (no paper table reports stage {self.stage}; its table as the stage wrote it)"

    def numbers(self) -> list[tuple[str, str, float, int | None]]:
        """(system, metric key, value, its n) of every finite number of the table's columns."""
        return [(row.system, col.key, float(value), metric_n(row, col.key))
                for row in self.table.rows for col in self.table.columns
                if isinstance(value := row.metrics.get(col.key), int | float) and math.isfinite(value)]

    def problems(self) -> list[str]:
        """Numbers shown without the n they stand on (the report refuses to publish them)."""
        return [f"{self.stage}: {system} / {key} = {value:g} has no n"
                for system, key, value, n in self.numbers() if n is None]


def evaluation_tables(profile: str, collected: Mapping[str, StoredEvalTable]) -> list[EvaluationTable]:
    """The collected evaluations' tables (``collected``: stage -> its stored table), in
    registry order, each with its context line and per-example outputs."""
    return [EvaluationTable(stage, stored.output, measured_by(f"profile {profile}", stored.where),
                            examples(stored.where, EvalTable.EXAMPLES))
            for stage, stored in collected.items()]
