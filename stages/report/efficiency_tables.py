"""The report's decoding-cost and training-cost tables, from eval_efficiency's `EvalTable`.

No paper table reports these numbers (Nugget2D claims the saving in words: its abstract and §1),
so the published column reads "not in paper" throughout. The findings address decode rows by
``<label>@<context>`` (the stage's ``paper_row``), by ``<label>@any`` (every context: the KV
share claim holds at each) and by ``<label>@long``: the row at the shortest context of at least
`LONG_CONTEXT` tokens the run measured (the speed claim is about long contexts; the shortest of
them is the hardest case the run has).
"""

from __future__ import annotations

from stages.artifacts.evaluate import StoredEvalTable
from stages.report.tables import ReportTable, add_eval_row, measured_by

EFFICIENCY_TABLE, TRAIN_COST_TABLE = "nugget2d_efficiency", "nugget2d_training_cost"
LONG_CONTEXT = 4096  # "at >= 4k tokens of context"
DECODE = {"context": "context", "ms_per_token": "ms_per_token", "speedup": "speedup", "bound_ms": "bound_ms",
          "over_bound": "over_bound", "kv_mb": "kv_mb", "kv_share": "kv_share", "prefill_ms": "prefill_ms"}
TRAIN = {"step_s": "step_s", "step_ratio": "step_ratio", "activation_mb": "activation_mb", "peak_mb": "peak_mb"}


def long_row(label: str) -> str:
    return f"{label}@long"


def any_row(label: str) -> str:
    return f"{label}@any"


def efficiency_tables(stored: StoredEvalTable | None, context: str) -> list[ReportTable]:
    """The decode table (a row per system and context) and the training-step table (none when the
    stage is not part of the run: no paper row waits for them)."""
    if stored is None:
        return []
    decode = ReportTable(EFFICIENCY_TABLE, "Nugget2D decoding cost by context length: ms per generated token, "
                         "KV, each beside its memory-bandwidth bound", context, list(DECODE))
    train = ReportTable(TRAIN_COST_TABLE, "Nugget2D vs Full fine-tuning: one training step", context, list(TRAIN))
    decode.context = train.context = measured_by(context, stored.where)
    table = stored.output
    rows = [r for r in table.rows if r.metrics.get("ms_per_token") is not None]
    long = [n for r in rows if (n := int(r.metrics.get("context") or 0)) >= LONG_CONTEXT]
    shortest_long = min(long) if long else None
    for row in rows:
        label, context = row.paper_row.rsplit("@", 1)
        also = (row.paper_row, any_row(label)) + ((long_row(label),) if int(context) == shortest_long else ())
        add_eval_row(decode, row.system, row, DECODE, None, also=also)
    for row in table.rows:
        if row.metrics.get("step_s") is not None:
            add_eval_row(train, row.system, row, TRAIN, None)
    return [decode, train]
