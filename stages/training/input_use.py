"""Does a trained model read its compressed input? The end-of-fit check of the training loop.

A model whose dev loss is the same whether it reads its own example's compressed input
(nuggets, a memory of history segments, a single embedding) or another example's ignores that
input: whatever it outputs, it would output without it, so nothing measured on it downstream is
a sign of the compression (e.g. Nugget AEs of different ratios that end at the same dev loss,
or Nugget LMs whose dev loss is the same whatever their history).

At the end of every fit, on rank 0, on the weights the fit exports (eval mode, no grad), each
dev example is scored twice over the same target tokens: as collated (its own input) and in the
task's mismatched batch (`stages.training.task.CompressedInputTask.mismatch`: its input taken
from another example of the batch, half the batch away). Check batches hold about
``job.batch_size`` examples, never fewer than two (a derangement needs two), strided over the dev
split (batch ``k`` holds examples ``k, k + c, k + 2c, ...``), so an example's donor lies about
half the split away (not the neighbouring window of its own document). Each example is scored
alone (a batch of one sliced from the collated batch: `example_of`), its NLL sum and target
tokens the unit's statistics; units are dev examples, and the rise ``other - own`` in mean NLL
per target token gets its paired 95% bootstrap interval over them
(`stages.common.resampling.difference`). The result is `stages.artifacts.trainer_state.InputUse`,
recorded in the trainer state as ``input_use: {own, other, low, high, n}`` with
``input_use_note`` saying why it is None: the task has no compressed input, its batches carry
none, or the dev split has fewer examples than `stages.common.resampling.MIN_UNITS` (no interval
below that).

Cost: two more passes over the dev split, one example per forward
(docs/training.md gives the seconds measured on the tiny profile's models).
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from stages.artifacts.trainer_state import InputUse
from stages.common.device import to_device
from stages.common.resampling import MIN_UNITS, UnitSample, difference
from stages.training.task import CompressedInputTask

if TYPE_CHECKING:
    from stages.framework.tracking import MetricBuffer
    from stages.training.task import Batch, TrainingTask

UNIT = "dev example"


def check_batches(n: int, batch_size: int) -> list[list[int]]:
    """Indices of ``n`` (>= 2) dev examples in ``ceil(n / batch_size)`` batches (at most n // 2,
    so each holds at least two), batch ``k`` the examples ``k, k + c, k + 2c, ...`` (``c`` the
    number of batches)."""
    if n < 2:
        raise ValueError(f"input use: {n} dev example(s); a mismatch needs two")
    count = max(1, min(math.ceil(n / max(2, batch_size)), n // 2))
    return [list(range(k, n, count)) for k in range(count)]


def example_of(batch: Batch, index: int, size: int) -> Batch:
    """Example ``index`` of ``batch`` (of ``size`` examples) as a batch of one: every tensor whose
    first dimension is ``size`` sliced, the others (``predict_last [1]``: one per batch) kept."""
    return {k: v[index : index + 1] if v.dim() and v.shape[0] == size else v for k, v in batch.items()}


def score_examples(task: TrainingTask, model: nn.Module, batch: Batch, size: int, device: torch.device,
                   autocast: Callable[[], AbstractContextManager[Any]]) -> list[tuple[float, int]]:
    """``(NLL sum, target tokens)`` of each example of ``batch`` under ``model`` (eval mode, no grad)."""
    rows = []
    for i in range(size):
        one = example_of(batch, i, size)
        n = task.n_target_tokens(one)
        with autocast():
            loss = task.loss(model, to_device(one, device))
        rows.append((loss.item() * n if n else 0.0, n))
    return rows


def measure_input_use(task: TrainingTask, model: nn.Module, dev: Sequence[Any], batch_size: int,
                      device: torch.device, autocast: Callable[[], AbstractContextManager[Any]]
                      ) -> tuple[InputUse | None, str]:
    """``(InputUse, "")`` of ``model`` on ``dev``, or ``(None, why not)``."""
    if not isinstance(task, CompressedInputTask):
        return None, f"no compressed input ({type(task).__name__} defines no mismatch)"
    if len(dev) < MIN_UNITS:
        return None, f"{len(dev)} dev examples: fewer than {MIN_UNITS}, too few to tell"
    ids: list[int] = []
    own: list[tuple[float, int]] = []
    other: list[tuple[float, int]] = []
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            for indices in check_batches(len(dev), batch_size):
                batch = task.collate([dev[i] for i in indices], step=-1, rank=0, train=False)
                swapped = task.mismatch(batch)
                if swapped is None:
                    return None, f"no compressed input in {type(task).__name__}'s batches"
                mine = score_examples(task, model, batch, len(indices), device, autocast)
                theirs = score_examples(task, model, swapped, len(indices), device, autocast)
                for i, a, b in zip(indices, mine, theirs, strict=True):
                    if a[1] != b[1]:
                        raise ValueError(f"{type(task).__name__}.mismatch changed the targets of dev example {i} "
                                         f"({a[1]} target tokens, {b[1]} mismatched): it must swap the input only")
                    if a[1]:  # an example without target tokens has no loss to compare
                        ids.append(i)
                        own.append(a)
                        other.append(b)
    finally:
        model.train(was_training)
    if len(ids) < MIN_UNITS:
        return None, f"{len(ids)} dev examples with target tokens: fewer than {MIN_UNITS}, too few to tell"
    own_sample, other_sample = (UnitSample.of(UNIT, "ratio", ids, rows) for rows in (own, other))
    rise = difference(other_sample, own_sample)  # other - own: the interval InputUse holds
    if rise is None:
        return None, f"dev loss not finite (own {own_sample.value()}, another's {other_sample.value()})"
    return InputUse(own_sample.value(), other_sample.value(), rise.low, rise.high, rise.n), ""


def input_use_record(use: InputUse | None) -> dict[str, float] | None:
    """The trainer state's ``input_use`` (`stages.artifacts.trainer_state.summary_of` reads it)."""
    if use is None:
        return None
    return {"own": use.own, "other": use.other, "low": use.low, "high": use.high, "n": use.n}


def input_use_metrics(use: InputUse) -> dict[str, float]:
    """MLflow metrics of ``use`` (``input_use_n``, a sample size, goes in as a param)."""
    return {"input_use_own": use.own, "input_use_other": use.other, "input_use_rise": use.other - use.own,
            "input_use_rise_low": use.low, "input_use_rise_high": use.high, "input_use_n": use.n}


def input_use_line(label: str, use: InputUse | None, note: str, seconds: float) -> str:
    """The log line of a fit's input-use check."""
    if use is None:
        return f"{label} input use: not measured, {note}"
    return (f"{label} input use: dev loss own {use.own:.3f}, another example's {use.other:.3f} "
            f"(rise {use.other - use.own:+.3f} [{use.low:+.3f}, {use.high:+.3f}], n = {use.n} dev examples, "
            f"{seconds:.1f} s)")


def check_input_use(task: TrainingTask, model: nn.Module, dev: Sequence[Any], batch_size: int,
                    device: torch.device, autocast: Callable[[], AbstractContextManager[Any]], label: str,
                    log: logging.Logger, metrics: MetricBuffer | None, step: int
                    ) -> tuple[dict[str, float] | None, str]:
    """The loop's end-of-fit check (rank 0): measure, log the line (and a warning where the model
    ignores its input), add the metrics (``eval/input_use_*`` at ``step``); the trainer state's
    ``(input_use, input_use_note)``."""
    start = time.time()
    use, note = measure_input_use(task, model, dev, batch_size, device, autocast)
    log.info(input_use_line(label, use, note, time.time() - start))
    if use is not None and use.ignores:
        log.warning(f"{label} {use.reason()}")
    if use is not None and metrics is not None:
        metrics.add({f"eval/{k}": v for k, v in input_use_metrics(use).items()}, step)
    return input_use_record(use), note
