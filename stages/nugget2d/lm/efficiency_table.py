"""eval_efficiency's table: decoding cost per system and context length, and the training step.

One decode row per system and context length (``<label>:<n>``; ``paper_row`` ``<label>@<n>``,
what the report addresses): ms per generated token (mean over the repeats, its 95% bootstrap
interval over repeats, the unit two systems pair on), the speed-up over Full at the same context
(Full's mean over the system's), the bound (weights + cache read once at the measured bandwidth)
and the ratio to it, the document's KV in MB and as a share of Full's, the static cache a step
reads, and the document pass. One training row per system (``train_<system>``): seconds per step,
its ratio to Full FT's, the activations kept for backward, the CUDA peak where measured.
"""

from __future__ import annotations

from collections.abc import Sequence

from stages.artifacts.evaluate import Column, EvalTable, TableRow
from stages.common.bandwidth import Bandwidth
from stages.common.resampling import UnitSample
from stages.nugget2d.artifacts import EFFICIENCY_TRAINING_NOTE
from stages.nugget2d.lm.efficiency import DecodeCost
from stages.nugget2d.lm.train_cost import TrainCost

MB = 1e6
REPEAT = "repeat"
DECODE_COLUMNS = [
    Column("context", "context tokens", "{:.0f}"),
    Column("ms_per_token", "ms / token", "{:.1f}"),
    Column("speedup", "speed-up vs Full", "{:.2f}"),
    Column("bound_ms", "bound ms / token", "{:.1f}"),
    Column("over_bound", "x its bound", "{:.2f}"),
    Column("kv_mb", "document KV MB", "{:.2f}"),
    Column("kv_share", "KV share of Full's", "{:.4f}"),
    Column("kv_kb_per_position", "KV kB per position", "{:.1f}"),
    Column("cache_mb", "KV cache held and read per step MB (peak)", "{:.2f}"),
    Column("prefill_ms", "document pass ms", "{:.0f}"),
]
TRAIN_COLUMNS = [
    Column("step_s", "s / training step", "{:.3f}"),
    Column("step_ratio", "step time vs Full FT", "{:.2f}"),
    Column("activation_mb", "activations kept MB", "{:.1f}"),
    Column("peak_mb", "CUDA peak MB", "{:.0f}"),
    Column("trainable_m", "trainable params (M)", "{:.2f}"),
]


def decode_row_id(label: str, context: int) -> str:
    return f"{label}@{context}"


def _decode_row(cost: DecodeCost, full: DecodeCost | None, bandwidth: Bandwidth) -> TableRow:
    units = UnitSample.of(REPEAT, "ratio", [f"r{i}" for i in range(len(cost.ms))], [[ms, 1.0] for ms in cost.ms])
    bound = 1000 * bandwidth.seconds_for(cost.read_bytes)
    metrics: dict[str, float | None] = {
        "context": float(cost.context),
        "ms_per_token": cost.mean_ms,
        "speedup": full.mean_ms / cost.mean_ms if full is not None and cost.mean_ms > 0 else None,
        "bound_ms": bound,
        "over_bound": cost.mean_ms / bound,
        "kv_mb": cost.context_kv_bytes / MB,
        "kv_share": cost.context_kv_bytes / full.context_kv_bytes if full is not None else None,
        "kv_kb_per_position": cost.context_kv_bytes / max(cost.kept, 1) / 1e3,
        "cache_mb": cost.cache_bytes / MB,
        "prefill_ms": sum(cost.prefill_ms) / len(cost.prefill_ms),
        # the n of each number that is no mean over repeats: one context measured, counted exactly
        **{f"n_{k}": 1.0 for k in ("context", "kv_mb", "kv_share", "kv_kb_per_position", "cache_mb", "bound_ms")},
        "n_prefill_ms": float(len(cost.prefill_ms)),
    }
    interval = units.interval()
    return TableRow(
        system=f"{cost.system.label}:{cost.context}", metrics=metrics, n=len(cost.ms),
        paper_row=decode_row_id(cost.system.label, cost.context),
        interval={"ms_per_token": interval} if interval is not None else {},
        units={"ms_per_token": units},
        note=f"{cost.kept} document positions per layer, prompt {cost.prompt} tokens",
    )


def _train_row(cost: TrainCost, full: TrainCost) -> TableRow:
    return TableRow(
        system=f"train_{cost.system}", n=len(cost.step_s), metrics={
            "step_s": cost.mean_s, "step_ratio": cost.mean_s / full.mean_s,
            "activation_mb": cost.activation_bytes / MB,
            "peak_mb": cost.peak_bytes / MB if cost.peak_bytes is not None else None,
            "trainable_m": cost.trainable / 1e6,
            **{f"n_{k}": 1.0 for k in ("activation_mb", "peak_mb", "trainable_m")},
        })


def efficiency_table(decode: Sequence[DecodeCost], train: Sequence[TrainCost], bandwidth: Bandwidth,
                     setting: str, warmup: int, steps: int) -> EvalTable:
    """The table of eval_efficiency (module docstring); ``setting`` names the model, device and
    precision for the notes."""
    full_at = {c.context: c for c in decode if c.system.ratio is None}
    rows = [_decode_row(c, full_at.get(c.context), bandwidth) for c in decode]
    full_train = next((c for c in train if c.system == "full_ft"), None)
    if full_train is not None:
        rows += [_train_row(c, full_train) for c in train]
    weights = decode[0].weight_bytes / MB if decode else 0.0
    notes = [
        f"Setting: {setting}. Memory bandwidth: {bandwidth.describe()}, measured at the start of the stage.",
        f"ms / token: per repeat, (t(decode {warmup + steps} tokens) - t(decode {warmup})) / {steps}, EOS off, "
        "through the decoding eval_qa runs (generate_from_context on a static cache); the mean over the repeats, "
        "which run interleaved across systems (repeat i of every system back to back: the pairing unit).",
        f"bound: (weights {weights:.1f} MB read once + the KV cache held, read whole every step) / the bandwidth; 'x its bound' is "
        "the measured time over it (1 = the step runs at the memory system's speed).",
        "document KV: the keys and values of the document part as tensors (per layer: k positions x KV heads x "
        "head dim x 2, every layer); share: over Full's at the same context (Nugget2D and the presses keep "
        "ceil(r n) positions per layer); per position: all layers' keys and values of one token. KV cache held: the "
        "static cache, allocated whole before the first step and so the peak of KV held while decoding (document "
        "KV + prompt + every generated token's slot); a step reads all of it, masked slots too.",
        "document pass: Full's and a press's base-LM pass over the document (the press then prunes), Nugget2D's "
        "compression (phi's pass and the scorer's selection).",
    ]
    if full_train is not None:
        notes.append(f"{EFFICIENCY_TRAINING_NOTE} LoRA of the same rank and targets, AdamW, loss on the answer; Nugget2D in its "
                     "fine-tuning objective's pass, Full FT on document | prompt | answer; mean of the timed steps "
                     "after one untimed; activations kept: distinct non-weight storages saved for backward in one "
                     "forward (a tensor count, the same on every device); CUDA peak: max_memory_allocated.")
    return EvalTable(title="Decoding and training cost: Nugget2D vs Full and the presses (eval_efficiency)",
                     columns=[*DECODE_COLUMNS, *(TRAIN_COLUMNS if full_train is not None else [])],
                     rows=rows, notes=notes)
