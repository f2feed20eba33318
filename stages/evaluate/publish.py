"""Publish an evaluation's table (`stages.artifacts.evaluate.EvalTable`) and its
per-example outputs as stage files, MLflow artifacts and MLflow metrics."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from stages.artifacts.evaluate import EvalTable, metric_name
from stages.common.records import write_jsonl
from stages.framework.stage import StageContext

EXAMPLES = EvalTable.EXAMPLES  # one line per system and example; read by people, not stages


def publish(ctx: StageContext, table: EvalTable, examples: Sequence[dict[str, Any]]) -> None:
    """Write the table through its contract and ``examples.jsonl``, log them as artifacts
    and as MLflow tables (``tables/results.json``, ``tables/examples.json``), and every
    number as a metric ``<system>/<metric>``, with the row's n (examples / segments behind
    every metric of the row) as ``<system>/n``."""
    files = table.write(ctx.output_dir)
    write_jsonl(ctx.output_dir / EXAMPLES, examples)
    ctx.log_metrics({**table.flat_metrics(), **{metric_name(f"{r.system}/n"): r.n for r in table.rows if r.n is not None}})
    for path in (*files, ctx.output_dir / EXAMPLES):
        ctx.log_artifact(path)
    # the MLflow UI shows these as tables (Artifacts tab / Evaluation)
    ctx.log_table([{"system": r.system, "n": r.n, **r.metrics} for r in table.rows], "tables/results.json")
    if examples:
        ctx.log_table([{k: v if isinstance(v, str | int | float | bool) or v is None else json.dumps(v)
                        for k, v in e.items()} for e in examples], "tables/examples.json")
