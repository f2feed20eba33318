"""The system x metric table of an evaluation, as MLflow artifacts and metrics.

Files (issue 7, item 6): ``table.md`` (markdown), ``table.csv``, ``metrics.json``
(``{system: {metric: value}}`` plus notes) and ``examples.jsonl`` (one line per system
and example). A system that cannot run in this profile keeps its row, with its reason
instead of numbers, so a table never silently loses a system.
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from stages.framework.stage import StageContext

NOT_RUN = "not run in this profile"


@dataclass
class Column:
    key: str
    header: str
    fmt: str = "{:.2f}"


@dataclass
class Row:
    system: str
    metrics: dict[str, float] = field(default_factory=dict)
    note: str = ""  # e.g. the reason a system did not run, or what its weights are


def _cell(row: Row, col: Column) -> str:
    if col.key not in row.metrics:
        return ""
    value = row.metrics[col.key]
    return "nan" if isinstance(value, float) and math.isnan(value) else col.fmt.format(value)


def markdown(title: str, rows: Sequence[Row], columns: Sequence[Column], notes: Sequence[str]) -> str:
    head = ["system", *[c.header for c in columns], "note"]
    lines = [f"## {title}", "", "| " + " | ".join(head) + " |",
             "|---|" + "---:|" * len(columns) + "---|"]
    for r in rows:
        lines.append("| " + " | ".join([r.system, *[_cell(r, c) for c in columns], r.note]) + " |")
    lines += ["", *[f"- {n}" for n in notes]]
    return "\n".join(lines) + "\n"


def _finite(metrics: dict[str, float]) -> dict[str, float | None]:
    """JSON has no NaN: an undefined value (e.g. no whole word scored) becomes null."""
    return {k: (v if math.isfinite(v) else None) for k, v in metrics.items()}


def publish(
    ctx: StageContext,
    title: str,
    rows: Sequence[Row],
    columns: Sequence[Column],
    examples: Sequence[dict[str, Any]],
    notes: Sequence[str] = (),
) -> None:
    """Write the four files, log them as artifacts and every number as a metric
    (``<system>/<metric>``)."""
    out = ctx.output_dir
    (out / "table.md").write_text(markdown(title, rows, columns, notes))
    with open(out / "table.csv", "w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["system", *[c.key for c in columns], "note"])
        for r in rows:
            writer.writerow([r.system, *[r.metrics.get(c.key, "") for c in columns], r.note])
    ctx.write_json("metrics.json", {
        "title": title,
        "systems": {r.system: {"metrics": _finite(r.metrics), "note": r.note} for r in rows},
        "notes": list(notes),
    })
    with open(out / "examples.jsonl", "w") as fh:
        for e in examples:
            fh.write(json.dumps(e, ensure_ascii=False) + "\n")
    metrics = {f"{r.system}/{k}": v for r in rows for k, v in r.metrics.items() if math.isfinite(v)}
    ctx.log_metrics(metrics)
    for name in ("table.md", "table.csv", "metrics.json", "examples.jsonl"):
        ctx.log_artifact(out / name)
