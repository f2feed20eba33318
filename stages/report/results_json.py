"""``results.json``: every measured cell of the report, machine-readable, and the headline
metric names.

One flat record per measured number (`cell_records`): ``table`` (the report table's id, or
the collected evaluation's stage), ``row`` (the system's label), ``row_id`` (the published
row it reproduces, null if none), ``column``, ``value``, ``n``, ``low`` / ``high`` (its 95%
interval, null without one), ``flags`` (why the system is uninformative, null if it is
not), ``published`` (the paper's value of the cell, null if none) and ``verdict`` (the
findings standing on the cell, "<finding>: <verdict>" joined by "; ", null if none). The
framework logs the file to the pipeline's parent MLflow run as a table
(``Report.parent_tables``).

`headline_name` writes the name a number of a paper table carries on the parent run, read
by a person: ``nugget.table2.nugget_mt_0.1.pi``, ``nugget2d.table3.nugget2d_10x.accuracy``.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from stages.report.evaluation_tables import EvaluationTable
from stages.report.findings import FINDINGS, Finding, Verdict
from stages.report.published import published
from stages.report.tables import ReportTable

RESULTS = "results.json"
# what MLflow refuses in a metric name (it accepts letters, digits, _ - . / and space) and the readable
# stand-ins of the characters the papers' row ids use
_READABLE = {">=": "_ge_", "<=": "_le_", ">": "_gt_", "<": "_lt_", "=": "", "|": ".", "%": "pct"}
_REFUSED = re.compile(r"[^\w.\-/ ]")


def headline_name(*parts: str) -> str:
    """``parts`` joined by '.' as a readable MLflow metric name: a table id's study prefix
    (``nugget_``, ``nugget2d_``, ``re_``) becomes its own part, '>=' reads '_ge_', '|' a '.',
    and any other character MLflow refuses a '_'."""
    text = ".".join(p for p in parts if p)
    text = re.sub(r"^(nugget2d|nugget|re)_", r"\1.", text)
    for symbol, word in _READABLE.items():
        text = text.replace(symbol, word)
    return _REFUSED.sub("_", text)


def _cells(finding: Finding) -> tuple[tuple[str, str, str], ...]:
    return tuple((c.table, c.row, c.column) for c in finding.cells)


def _verdicts_by_cell(verdicts: Sequence[Verdict], findings: Sequence[Finding]) -> dict[tuple[str, str, str], str]:
    by_id = {v.finding: v for v in verdicts}
    out: dict[tuple[str, str, str], list[str]] = {}
    for f in findings:
        if f.id in by_id:
            for cell in _cells(f):
                out.setdefault(cell, []).append(f"{f.id}: {by_id[f.id].verdict}")
    return {cell: "; ".join(texts) for cell, texts in out.items()}


def _finite(x: float | None) -> float | None:
    """JSON has no NaN / infinity: an undefined number is null."""
    return x if x is not None and math.isfinite(x) else None


def _record(table: str, row: str, row_id: str | None, column: str, value: float, n: int | None,
            low: float | None, high: float | None, flags: str, published_value: Any, verdict: str | None
            ) -> dict[str, Any]:
    return {"table": table, "row": row, "row_id": row_id, "column": column, "value": _finite(value), "n": n,
            "low": _finite(low), "high": _finite(high), "flags": flags or None, "published": published_value, "verdict": verdict}


def cell_records(tables: Sequence[ReportTable], evaluations: Sequence[EvaluationTable],
                 verdicts: Sequence[Verdict] = (), findings: Sequence[Finding] = FINDINGS) -> list[dict[str, Any]]:
    """One record per measured number of ``tables`` and of the collected ``evaluations``."""
    judged = _verdicts_by_cell(verdicts, findings)
    out = []
    for t in tables:
        aliases = {id(v): alias for alias, _, v in t.aliases}
        for row_id, column, v in t.numbers:
            verdict = judged.get((t.id, row_id or aliases.get(id(v), ""), column))
            pub = published(t.paper_table, row_id, column) if row_id else None
            out.append(_record(t.id, v.label, row_id, column, v.value, v.n, v.low, v.high, v.flag, pub, verdict))
    for e in evaluations:
        flags = {r.system: r.flag for r in e.table.rows}
        intervals = {r.system: r.interval for r in e.table.rows}
        for system, key, value, n in e.numbers():
            low, high = intervals[system].get(key, (None, None))
            out.append(_record(e.stage, system, None, key, value, n, low, high, flags[system], None, None))
    return out


def write_results(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text(json.dumps(records, indent=1, allow_nan=False) + "\n")
    return path
