"""Publish an evaluation's table (`stages.artifacts.evaluate.EvalTable`) and its
per-example outputs as stage files, MLflow artifacts and MLflow metrics; and the systems
an evaluation found uninformative (`stages.common.degenerate`) as log lines and MLflow records."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from stages.artifacts.evaluate import EvalTable, metric_name
from stages.common.degenerate import LABEL, flag_line
from stages.common.progress import progress_logger
from stages.evaluation.samples import log_samples
from stages.framework.stage import StageContext

EXAMPLES = EvalTable.EXAMPLES  # one line per system and example; read by people, not stages


def log_flags(ctx: StageContext, flags: dict[str, str]) -> None:
    """Each uninformative system (``flags``: system -> reason): one line in the pipeline's log
    (a WARNING, so the quiet log keeps it), the MLflow metric ``<system>/uninformative`` = 1 and
    the tag ``uninformative.<system>`` holding the reason; ``uninformative_systems`` counts them."""
    log = progress_logger(f"nugget.{ctx.stage}")
    for system, reason in flags.items():
        log.warning(flag_line(ctx.stage, system, reason))
    ctx.log_metrics({**{metric_name(f"{system}/{LABEL}"): 1.0 for system in flags},
                     f"{LABEL}_systems": float(len(flags))})
    if flags:
        ctx.set_tags({metric_name(f"{LABEL}.{system}")[:250]: reason[:5000] for system, reason in flags.items()})


def publish(ctx: StageContext, table: EvalTable, examples: Sequence[dict[str, Any]]) -> None:
    """Write the table through its contract and ``examples.jsonl`` (the per-sample rows of
    `stages.evaluation.samples`), log them as artifacts and as MLflow tables
    (``tables/results.json``, ``tables/examples.json``: `log_samples`), every
    number as a metric ``<system>/<metric>``, with the row's n (examples / segments behind
    every metric of the row) as ``<system>/n`` and the independent units its interval resamples
    as ``<system>/<metric>_units``, each competence floor as ``floor/<metric>``, and the rows
    flagged uninformative (`log_flags`)."""
    files = table.write(ctx.output_dir)
    ctx.log_metrics({**table.flat_metrics(), **{metric_name(f"{r.system}/n"): r.n for r in table.rows if r.n is not None},
                     **{metric_name(f"{r.system}/{k}_units"): u.n for r in table.rows for k, u in r.units.items()},
                     **{metric_name(f"floor/{k}"): f.value for k, f in table.floors.items() if math.isfinite(f.value)}})
    log_flags(ctx, {r.system: r.flag for r in table.rows if r.flag})
    for path in files:
        ctx.log_artifact(path)
    # the MLflow UI shows these as tables (Artifacts tab / Evaluation)
    ctx.log_table([{"system": r.system, "n": r.n, **r.metrics, LABEL: r.flag} for r in table.rows],
                  "tables/results.json")
    log_samples(ctx, ctx.output_dir / EXAMPLES, examples)
