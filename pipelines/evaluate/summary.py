"""How ``nugget eval`` reports a result: each metric as ``name = mean ± half-width [low, high]
(n = N)`` with the 95% interval the evaluation tables show (`stages.common.intervals`: the
recipe's own interval, a Wilson or bootstrap one, else ± 1.96 standard errors of the mean), the
degenerate-output check of `stages.common.degenerate` on the generations, and ``--output``'s
files: ``examples.jsonl`` (the recipe's per-example rows, `stages.common.records.write_jsonl`)
and ``summary.json`` (metrics, intervals, n, checkpoint, task, data, flags)."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from stages.artifacts.evaluate import TableRow
from stages.common.degenerate import LABEL, combine, constant_outputs, generation_flags
from stages.common.intervals import Z95
from stages.common.records import write_jsonl
from stages.common.resampling import MIN_UNITS

EXAMPLES_FILE = "examples.jsonl"
SUMMARY_FILE = "summary.json"


def interval(row: TableRow, metric: str) -> tuple[float, float] | None:
    """The 95% interval of ``metric`` in ``row``: its own (asymmetric) one, else mean ± 1.96
    standard errors, else None (fewer than two examples)."""
    value = row.metrics.get(metric)
    if metric in row.interval:
        return row.interval[metric]
    if value is not None and row.stderr.get(metric) is not None:
        half = Z95 * row.stderr[metric]
        return value - half, value + half
    return None


def metric_line(row: TableRow, metric: str) -> str:
    """``metric = mean ± half-width [low, high] (n = N)``; the half-width of an asymmetric
    interval is half its width."""
    value, bounds = row.metrics.get(metric), interval(row, metric)
    if value is None or not math.isfinite(value):  # e.g. a word perplexity with no whole word scored
        return f"{metric} = undefined (n = {row.n})"
    if bounds is None:
        units = row.units.get(metric)  # resampled by unit: none below MIN_UNITS of them
        if units is not None:
            why = (f"below {MIN_UNITS} {units.unit}s" if units.n < MIN_UNITS else "undefined on these examples")
        else:
            why = "below 2 examples" if (row.n or 0) < 2 else "undefined on these examples"
        return f"{metric} = {value:.2f} (no interval: {why}) (n = {row.n})"
    low, high = bounds
    return f"{metric} = {value:.2f} ± {(high - low) / 2:.2f} [{low:.2f}, {high:.2f}] (n = {row.n})"


def degenerate(outputs: Sequence[Any], recipe_flag: str = "", kind: str = "text") -> dict[str, Any]:
    """Counts of empty and distinct outputs and the reason they are uninformative, "" when they
    are not: generated texts (``kind`` "text") by `generation_flags` (constant, loops, empty),
    rankings ("ranking") by `constant_outputs`; a task without outputs ("none", a perplexity)
    by the recipe's own flag only, which joins the others too."""
    texts = kind == "text"
    empty = sum(not o.strip() for o in outputs) if texts else 0
    distinct = len({" ".join(o.split()) if texts else json.dumps(o) for o in outputs})
    found = generation_flags(outputs) if texts else \
        constant_outputs([tuple(o) for o in outputs]) if kind == "ranking" else None
    flag = combine(recipe_flag or None, found) or ""
    # the recipe's flag may already say what generation_flags says: keep each reason once
    flag = "; ".join(dict.fromkeys(flag.split("; "))) if flag else ""
    return {"n": len(outputs), "empty": empty, "distinct": distinct, "flag": flag}


def warning_line(check: dict[str, Any]) -> str | None:
    """The warning printed for degenerate outputs (None when there is nothing to warn about)."""
    if not (check["flag"] or check["empty"]):
        return None
    counts = f"{check['empty']} empty, {check['distinct']} distinct of {check['n']} outputs"
    return f"warning: {LABEL} outputs: {check['flag']} ({counts})" if check["flag"] else f"warning: {counts}"


def summary(rows: Sequence[TableRow], metrics: tuple[str, ...], check: dict[str, Any],
            about: dict[str, Any]) -> dict[str, Any]:
    """The ``summary.json`` object: per metric its mean, interval and n (keyed ``<row> <metric>``
    when the task has several rows, e.g. one per context configuration); the degenerate check;
    ``about``."""
    scores: dict[str, dict[str, Any]] = {}
    others: dict[str, float | None] = {}
    for row in rows:
        prefix = f"{row.system} " if len(rows) > 1 else ""
        for m in metrics:
            bounds = interval(row, m)
            scores[prefix + m] = {"mean": row.metrics.get(m), "low": bounds[0] if bounds else None,
                                  "high": bounds[1] if bounds else None, "n": row.n}
        # JSON has no NaN: an undefined number (e.g. a cost not measured) is null
        others |= {prefix + k: v if v is None or math.isfinite(v) else None
                   for k, v in row.metrics.items() if k not in metrics}
    return {**about, "n": rows[0].n, "metrics": scores, "other_metrics": others, "degenerate": check}


def write_output(folder: Path, examples: list[dict[str, Any]], result: dict[str, Any]) -> list[Path]:
    """``examples.jsonl`` and ``summary.json`` in ``folder`` (created); the paths written."""
    folder.mkdir(parents=True, exist_ok=True)
    write_jsonl(folder / EXAMPLES_FILE, examples)
    (folder / SUMMARY_FILE).write_text(json.dumps(result, indent=2, ensure_ascii=False, default=str) + "\n")
    return [folder / EXAMPLES_FILE, folder / SUMMARY_FILE]
