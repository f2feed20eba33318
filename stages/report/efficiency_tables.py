"""The report's decoding-cost and training-cost tables, from eval_efficiency's `EvalTable`.

No paper table reports these numbers (Nugget2D claims the saving in words: its abstract and §1),
so the published column reads "not in paper" throughout. The findings address decode rows by
``<label>@<context>`` (the stage's ``paper_row``), by ``<label>@any`` (every context: the KV
share claim holds at each) and by ``<label>@long``: the row at the shortest context of at least
`LONG_CONTEXT` tokens the run measured (the speed claim is about long contexts; the shortest of
them is the hardest case the run has).
"""

from __future__ import annotations

from stages.artifacts.evaluate import EvalTable, StoredEvalTable, TableRow
from stages.nugget2d.artifacts import EFFICIENCY_TRAINING_NOTE as TRAINING_NOTE
from stages.report.tables import ReportTable, add_eval_row, examples, measured_by

EFFICIENCY_TABLE, TRAIN_COST_TABLE = "nugget2d_efficiency", "nugget2d_training_cost"
LONG_CONTEXT = 4096  # "at >= 4k tokens of context"
MS, KV_SHARE = "ms / token", "KV share of Full's"
# report column -> eval_efficiency's metric key (`stages.nugget2d.lm.efficiency_table`)
DECODE = {MS: "ms_per_token", "speed-up vs Full": "speedup", "bound ms / token": "bound_ms", "x its bound": "over_bound",
          "document KV MB": "kv_mb", KV_SHARE: "kv_share", "KV cache held MB": "cache_mb",
          "document pass ms": "prefill_ms"}
TRAIN = {"s / step": "step_s", "step time vs Full FT": "step_ratio", "activations kept MB": "activation_mb",
         "CUDA peak MB": "peak_mb"}
WHY = "the papers report no number for these; the claim they test is in their words, quoted with the findings"


def decode_label(row: TableRow) -> str:
    """The system label of a decode row (its ``paper_row`` is ``<label>@<context>``)."""
    return row.paper_row.rsplit("@", 1)[0]


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
                         "KV, each beside its memory-bandwidth bound", context, list(DECODE), no_paper_table=WHY)
    train = ReportTable(TRAIN_COST_TABLE, "Nugget2D vs Full fine-tuning: one training step", context, list(TRAIN),
                        no_paper_table=WHY)
    decode.context = train.context = measured_by(context, stored.where)
    table = stored.output
    decode.examples = train.examples = examples(stored.where, EvalTable.EXAMPLES)
    decode.extra_notes = [n for n in table.notes if not n.startswith(TRAINING_NOTE)]
    train.extra_notes = [n for n in table.notes if n.startswith(TRAINING_NOTE)]
    rows = [r for r in table.rows if r.metrics.get("ms_per_token") is not None]
    long = [n for r in rows if (n := int(r.metrics.get("context") or 0)) >= LONG_CONTEXT]
    shortest_long = min(long) if long else None
    for row in rows:
        label = decode_label(row)
        also = (row.paper_row, any_row(label)) + ((long_row(label),) if int(row.metrics["context"] or 0) == shortest_long
                                                  else ())
        add_eval_row(decode, row.system, row, DECODE, None, also=also)
    for row in table.rows:
        if row.metrics.get("step_s") is not None:
            cpu = {"CUDA peak MB": "not measured: no CUDA device"} if row.metrics.get("peak_mb") is None else {}
            add_eval_row(train, row.system, row, TRAIN, None, unmeasurable=cpu)
    return [decode, train]
