"""Publish an evaluation's table (`stages.artifacts.evaluate.EvalTable`) and its
per-example outputs as stage files, MLflow artifacts and MLflow metrics."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from stages.artifacts.evaluate import EvalTable, metric_name
from stages.framework.stage import StageContext

EXAMPLES = "examples.jsonl"  # one line per system and example; read by people, not stages


def publish(ctx: StageContext, table: EvalTable, examples: Sequence[dict[str, Any]]) -> None:
    """Write the table through its contract and ``examples.jsonl``, log them as artifacts
    and every number as a metric ``<system>/<metric>``, with the row's n (examples /
    segments behind every metric of the row) as ``<system>/n``."""
    files = table.write(ctx.output_dir)
    with open(ctx.output_dir / EXAMPLES, "w") as fh:
        for e in examples:
            fh.write(json.dumps(e, ensure_ascii=False) + "\n")
    ctx.log_metrics({**table.flat_metrics(), **{metric_name(f"{r.system}/n"): r.n for r in table.rows if r.n is not None}})
    for path in (*files, ctx.output_dir / EXAMPLES):
        ctx.log_artifact(path)


def stderr(values: Sequence[float]) -> float | None:
    """Standard error of the mean of ``values`` (None below two values)."""
    import statistics

    return statistics.stdev(values) / len(values) ** 0.5 if len(values) > 1 else None
