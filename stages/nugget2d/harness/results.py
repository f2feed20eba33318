"""What ``eval_harness`` makes of lm-evaluation-harness's output: the table rows (one per task and
system, every metric with the row's n and its 95% interval, `metric_interval`) and the per-sample
rows (`stages.evaluation.samples`). Plain dicts in, nothing from lm_eval imported.

The harness reports a metric as ``"<metric>,<filter>"`` with its standard error as
``"<metric>_stderr,<filter>"`` (a number, or ``"N/A"`` where it has none: its corpus-level
perplexities); ``n-samples`` holds each task's ``effective`` count (after ``--limit``); each logged
sample holds its per-document metric (a perplexity's ``(log-likelihood, words / bytes)``).

The intervals are the pipeline's (`stages.common.intervals`), not the harness's normal ones:

- a proportion (`PROPORTIONS`: acc, acc_norm, exact_match, the share of n examples): the Wilson
  score interval of value x n successes in n (Wald's value ± 1.96 stderr leaves [0, 1] at small n
  and has width 0 at 0 or n of n);
- a corpus-level perplexity (word_perplexity, byte_perplexity: exp(-sum log-likelihood / sum
  words or bytes)) and bits_per_byte (-sum log-likelihood / sum bytes / ln 2): the 95% percentile
  bootstrap over the documents, from the logged samples (none below two documents; the harness
  gives them no stderr);
- any other metric (a registered task's): value ± 1.96 x the harness's stderr, a normal
  approximation, where the harness gives one; none where it gives none.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from stages.artifacts.evaluate import Column, TableRow
from stages.common.degenerate import constant_outputs, generation_flags
from stages.common.intervals import Z95, wilson
from stages.common.resampling import UnitSample
from stages.evaluation.samples import Sample

NOT_APPLICABLE = "not applicable"
# the keys of a task's results that are no metric
_INFO = {"name", "alias", "sample_len", "samples", " "}
# metrics shown in this order (the local tasks'); any other (a registered task's) after them
KNOWN = ("exact_match", "acc", "acc_norm", "word_perplexity", "byte_perplexity", "bits_per_byte")
LOWER_BETTER = ("perplexity", "bits_per_byte")
#: metrics that are the share of the n examples scoring 1 (each example 0 or 1): Wilson's interval
PROPORTIONS = ("acc", "acc_norm", "exact_match")
#: corpus-level metrics of summed per-document (log-likelihood, units): bootstrap over documents
PERPLEXITIES = ("word_perplexity", "byte_perplexity")
BITS_PER_BYTE = "bits_per_byte"
#: the table's note on its intervals (eval_harness), what `metric_interval` applies
INTERVAL_NOTE = (
    "In this table x [a, b] is the harness's value and its 95% interval: for acc, acc_norm and exact_match "
    "(the share of the row's n examples) the Wilson score interval; for word_perplexity, byte_perplexity and "
    "bits_per_byte (corpus-level: the summed log-likelihood over the summed words / bytes) the percentile "
    "bootstrap over the documents (1000 resamples, none below two documents); for any other metric value ± 1.96 "
    "× the harness's own standard error (a normal approximation), none where the harness gives none.")


def metric_key(name: str) -> tuple[str, str] | None:
    """``(column key, harness key)`` of a results key naming a metric (None for the rest):
    the filter joins the metric name unless it is ``none``."""
    if name in _INFO or "," not in name or "_stderr," in name:
        return None
    metric, flt = name.split(",", 1)
    return (metric if flt == "none" else f"{metric}:{flt}"), name


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def task_metrics(values: Mapping[str, Any]) -> list[tuple[str, float | None, float | None]]:
    """``(column key, value, stderr)`` of every metric in the harness's ``results[task]``; the
    stderr None where the harness gives no finite one."""
    out = []
    for name in values:
        keys = metric_key(name)
        if keys is None:
            continue
        key, raw = keys
        metric, flt = raw.split(",", 1)
        se = _number(values.get(f"{metric}_stderr,{flt}"))
        out.append((key, _number(values[raw]), se if se is not None and math.isfinite(se) else None))
    return out


def _units(samples: Sequence[Mapping[str, Any]], metric: str, flt: str) -> UnitSample | None:
    """Per logged document (``doc_id``) its [-log-likelihood, words / bytes] of a perplexity-type
    ``metric`` under filter ``flt`` (bits per byte in bits: the NLL / ln 2); None where a sample lacks
    it (the interval then falls back to the harness's stderr)."""
    ids: list[Any] = []
    rows: list[list[float]] = []
    for s in samples:
        value = s.get(metric)
        if s.get("filter", "none") != flt:
            continue
        if not (isinstance(value, list | tuple) and len(value) == 2):
            return None
        nll = -float(value[0]) / (math.log(2) if metric == BITS_PER_BYTE else 1.0)
        ids.append(s.get("doc_id", len(ids)))
        rows.append([nll, float(value[1])])
    if not rows:
        return None
    return UnitSample.of("document", "ratio" if metric == BITS_PER_BYTE else "exp_ratio", ids, rows)


def metric_interval(key: str, value: float, se: float | None, n: int | None,
                    samples: Sequence[Mapping[str, Any]] = ()) -> tuple[float, float] | None:
    """The 95% interval of one metric of a row (module docstring): Wilson for a proportion, the
    bootstrap over ``samples`` (the task's logged documents) for a perplexity or bits per byte,
    else value ± 1.96 ``se`` (None without one)."""
    metric, _, flt = key.partition(":")
    flt = flt or "none"
    if metric in PROPORTIONS and n and 0.0 <= value <= 1.0:
        return wilson(value * n, n)
    if metric in PERPLEXITIES or metric == BITS_PER_BYTE:
        units = _units(samples, metric, flt)
        if units is not None:
            return units.interval()
    return (value - Z95 * se, value + Z95 * se) if se is not None else None


def task_row(task: str, system: str, values: Mapping[str, Any], n: int | None, note: str = "",
             samples: Sequence[Mapping[str, Any]] = ()) -> TableRow:
    """The table row of ``system`` on ``task`` (`task_metrics`): every metric and its 95% interval
    (`metric_interval`; ``samples``: the task's logged samples, for the perplexities'). The
    harness's stderr itself stays out of the row (the table would show it as ± beside the
    interval); `stderr_metrics` logs it."""
    measured = task_metrics(values)
    interval = {k: bounds for k, v, se in measured if v is not None
                and (bounds := metric_interval(k, v, se, n, samples)) is not None}
    return TableRow(system=f"{task} {system}", metrics={k: v for k, v, _ in measured}, n=n, interval=interval,
                    note=note)


def stderr_metrics(system: str, results: Mapping[str, Any]) -> dict[str, float]:
    """The harness's stderr of every metric of one result, as ``<task> <system>/<metric>_stderr``."""
    return {f"{task} {system}/{k}_stderr": se for task, values in results["results"].items()
            for k, _, se in task_metrics(values) if se is not None}


def not_applicable_row(task: str, system: str, reason: str) -> TableRow:
    """The row of a system that cannot answer the task's request type: no number, the reason."""
    return TableRow(system=f"{task} {system}", note=f"{NOT_APPLICABLE}: {reason}")


def columns(rows: Sequence[TableRow]) -> list[Column]:
    """Every metric of ``rows``: the local tasks' in `KNOWN` order, then the others as met."""
    keys = list(dict.fromkeys(k for r in rows for k in r.metrics))
    keys.sort(key=lambda k: KNOWN.index(k) if k in KNOWN else len(KNOWN))
    return [Column(k, k + (" ↓" if any(m in k for m in LOWER_BETTER) else ""), "{:.3f}") for k in keys]


def system_rows(system: str, results: Mapping[str, Any]) -> list[TableRow]:
    """One row per task (and group) of one ``simple_evaluate`` result (its logged samples, where
    it has them, give the perplexities' intervals)."""
    samples = results.get("samples") or {}
    return [task_row(task, system, values, count(results, task), samples=samples.get(task, ()))
            for task, values in results["results"].items()]


def count(results: Mapping[str, Any], task: str) -> int | None:
    """The examples behind ``task``'s numbers: its effective ``n-samples`` (after the limit), for
    a group the sum over its tasks (``group_subtasks``); None where the harness names none."""
    entry = results.get("n-samples", {}).get(task)
    value = _number(entry.get("effective")) if isinstance(entry, Mapping) else None
    if value is not None:
        return int(value)
    parts = [count(results, t) for t in results.get("group_subtasks", {}).get(task, [])]
    return sum(n for n in parts if n is not None) if parts and all(n is not None for n in parts) else None


def _output(request_type: str, sample: Mapping[str, Any]) -> Any:
    """What the system answered: the generated text, the choice it ranks first, none (rolling)."""
    responses = sample.get("filtered_resps") or []
    if request_type == "generate_until":
        return responses[0] if responses else None
    if request_type == "multiple_choice" and responses:
        scores = [r[0] if isinstance(r, list | tuple) else r for r in responses]
        choices = [a[1] for a in sample.get("arguments", [])]
        best = max(range(len(scores)), key=lambda i: scores[i])
        return choices[best].strip() if best < len(choices) else best
    return None


def _metrics(sample: Mapping[str, Any]) -> dict[str, Any]:
    """The sample's metrics; a perplexity's ``(log-likelihood, words / bytes)`` as its two numbers."""
    out: dict[str, Any] = {}
    for name in sample.get("metrics", []):
        value = sample.get(name)
        if isinstance(value, list | tuple) and len(value) == 2:
            out["loglikelihood"] = value[0]
            out[f"{name}_units"] = value[1]
        else:
            out[name] = value
    return out


def sample_rows(system: str, task: str, request_type: str, samples: Iterable[Mapping[str, Any]],
                settings: Mapping[str, Any]) -> list[dict[str, Any]]:
    """`Sample` rows of one task's logged samples (``results["samples"][task]``): the document's
    id, the request's arguments as the model read them (its context; a choice's continuation),
    the target, the output (`_output`) and every per-sample metric."""
    rows = []
    for s in samples:
        doc = s.get("doc") or {}
        arguments = [list(a)[:2] if request_type == "multiple_choice" else list(a)[:1] for a in s.get("arguments", [])]
        prompt = arguments[0][0] if arguments and arguments[0] else None
        inputs: dict[str, Any] = {"task": task, "request_type": request_type, "prompt": prompt}
        if request_type == "multiple_choice":
            inputs["choices"] = [a[1] for a in arguments if len(a) > 1]
        rows.append(Sample(doc.get("id", s.get("doc_id", "")), system, inputs, s.get("target"), _output(request_type, s),
                           _metrics(s), {"doc_id": s.get("doc_id"), **settings},
                           generated=request_type == "generate_until").row())
    return rows


def flags(rows: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """Per ``<task> <system>`` whose sample rows (`sample_rows`) say nothing about the method, why
    (`stages.common.degenerate`): generations mostly empty, loops or constant; a multiple choice
    answered by the same slot whatever the document (the slots are shuffled per document)."""
    grouped: dict[tuple[str, str, str], list[Mapping[str, Any]]] = {}
    for r in rows:
        grouped.setdefault((r["task"], r["system"], r["request_type"]), []).append(r)
    out = {}
    for (task, system, kind), group in grouped.items():
        if kind == "generate_until":
            reason = generation_flags([r["output"] or "" for r in group])
        elif kind == "multiple_choice":
            slots = [[c.strip() for c in r["choices"]].index(r["output"]) if r["output"] in
                     [c.strip() for c in r["choices"]] else -1 for r in group]
            reason = constant_outputs(slots)
            reason = reason and f"the chosen slot: {reason}"
        else:
            reason = None
        if reason:
            out[f"{task} {system}"] = reason
    return out
