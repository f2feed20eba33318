"""A training run bounded by wall-clock seconds (and a step cap), for the burst's models.

The pipeline's loop (`stages.training.loop`) runs on Ray Train and stops after a number of
steps; a lent GPU gives seconds. So this loop's schedule runs on *progress*, the larger of
steps / max_steps and elapsed / seconds: linear warm-up over the first steps, then a cosine
from the peak to ``min_lr_fraction`` of it that ends when the budget does, so a run is
annealed whenever it stops. AdamW (fused on CUDA), gradients clipped, bf16 autocast where the
`RunDevice` says so. The loss is read back every `SYNC_EVERY` steps only (each read waits for
the GPU), which is also when the curve gets a point.

Throughput: ``input_tokens`` (what the model reads: encoder or document tokens) and
``target_tokens`` (what the loss is on) per second, and an *estimate* of the model FLOP/s:
6 x trained parameters x target tokens per second (the "6ND" rule: forward 2 + backward 4
FLOPs per parameter and token), the trained parameters being those that received a gradient
in the first step. It counts embedding tables as if they were matmuls and ignores attention's
own FLOPs and the frozen weights' forward / input-gradient work (all of a LoRA model's base),
so it is an order of magnitude for a cost plan, not a measured utilisation; the counts behind
it (``trained_parameters``, ``trained_embedding_parameters``, ``frozen_parameters``) are
recorded for other estimates.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import torch
from torch import nn

from benchmarks.headline.environment import RunDevice
from benchmarks.headline.presets import LoopPreset
from stages.common.device import autocast, synchronize, to_device

Batch = dict[str, torch.Tensor]
SYNC_EVERY = 10
CURVE_POINTS = 30


def lr_factor(step: int, progress: float, loop: LoopPreset) -> float:
    """The learning rate at ``step`` (0-based) and ``progress`` in [0, 1], as a fraction of the peak."""
    warm = min(1.0, (step + 1) / max(loop.warmup_steps, 1))
    cosine = 0.5 * (1.0 + math.cos(math.pi * min(max(progress, 0.0), 1.0)))
    return warm * (loop.min_lr_fraction + (1.0 - loop.min_lr_fraction) * cosine)


@dataclass
class TrainResult:
    steps: int = 0
    seconds: float = 0.0
    stopped_by: str = ""  # "time" | "steps" | "non-finite loss"
    input_tokens: int = 0
    target_tokens: int = 0
    examples: int = 0
    trained_parameters: int = 0  # received a gradient in the first step
    trained_embedding_parameters: int = 0  # of those, embedding tables (lookups, not matmuls)
    frozen_parameters: int = 0
    curve: list[list[float]] = field(default_factory=list)  # [step, seconds, mean loss since the last point]

    def summary(self) -> dict[str, Any]:
        per_s = lambda n: n / self.seconds if self.seconds > 0 else 0.0  # noqa: E731
        first = self.curve[0][2] if self.curve else math.nan
        last = self.curve[-1][2] if self.curve else math.nan
        return {**asdict(self), "curve": thin(self.curve, CURVE_POINTS), "first_loss": first, "final_loss": last,
                "input_tokens_per_s": per_s(self.input_tokens), "target_tokens_per_s": per_s(self.target_tokens),
                "steps_per_s": per_s(self.steps),
                "model_flops_per_s_estimate": 6.0 * self.trained_parameters * per_s(self.target_tokens),
                "model_flops_note": "estimate: 6 x trained parameters x target tokens / s (module docstring "
                                    "of benchmarks.headline.loop); not a measured utilisation"}


def thin(curve: list[list[float]], points: int) -> list[list[float]]:
    """At most ``points`` of ``curve``, evenly spread, always with its first and last."""
    if len(curve) <= points:
        return curve
    picks = sorted({round(i * (len(curve) - 1) / (points - 1)) for i in range(points)})
    return [curve[i] for i in picks]


def train(model: nn.Module, loss_of: Callable[[Batch], torch.Tensor], batch_at: Callable[[int], Batch],
          tokens_of: Callable[[Batch], tuple[int, int]], loop: LoopPreset, run: RunDevice,
          seconds: float | None = None, max_steps: int | None = None) -> TrainResult:
    """Train ``model`` (its parameters with ``requires_grad``) on ``batch_at(step)`` (host
    tensors) until ``seconds`` (default ``loop.seconds``) or ``max_steps`` (default
    ``loop.max_steps``) is reached; ``tokens_of(batch)``: (input tokens, target tokens)."""
    seconds = loop.seconds if seconds is None else seconds
    max_steps = loop.max_steps if max_steps is None else max_steps
    params = [p for p in model.parameters() if p.requires_grad]
    fused = {"fused": True} if run.device.type == "cuda" else {}
    optimizer = torch.optim.AdamW(params, lr=loop.lr, betas=loop.betas, weight_decay=loop.weight_decay, **fused)
    result = TrainResult(frozen_parameters=sum(p.numel() for p in model.parameters() if not p.requires_grad))
    embeddings = {id(m.weight) for m in model.modules() if isinstance(m, nn.Embedding)}
    model.train()
    pending: list[torch.Tensor] = []
    synchronize(run.device)
    start = time.monotonic()
    while True:
        elapsed = time.monotonic() - start
        if result.steps >= max_steps or elapsed >= seconds:
            result.stopped_by = "steps" if result.steps >= max_steps else "time"
            break
        batch = batch_at(result.steps)
        inputs, targets = tokens_of(batch)
        factor = lr_factor(result.steps, max(result.steps / max_steps, elapsed / seconds), loop)
        for group in optimizer.param_groups:
            group["lr"] = loop.lr * factor
        with autocast(run.device, run.train_precision):
            loss = loss_of(to_device(batch, run.device, non_blocking=True))
        loss.backward()
        if result.steps == 0:
            result.trained_parameters = sum(p.numel() for p in params if p.grad is not None)
            result.trained_embedding_parameters = sum(p.numel() for p in params
                                                      if p.grad is not None and id(p) in embeddings)
        torch.nn.utils.clip_grad_norm_(params, loop.max_grad_norm)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        pending.append(loss.detach())
        result.steps += 1
        result.input_tokens, result.target_tokens = result.input_tokens + inputs, result.target_tokens + targets
        result.examples += len(next(iter(batch.values())))
        if result.steps == 1 or result.steps % SYNC_EVERY == 0:
            mean = float(torch.stack(pending).float().mean())  # waits for the GPU
            result.curve.append([result.steps, round(time.monotonic() - start, 2), mean])
            pending = []
            if not math.isfinite(mean):  # diverged: the rest of the budget would be wasted
                result.stopped_by = "non-finite loss"
                break
    if pending:
        result.curve.append([result.steps, round(time.monotonic() - start, 2),
                             float(torch.stack(pending).float().mean())])
    synchronize(run.device)
    result.seconds = time.monotonic() - start
    model.eval()
    return result


def epoch_sampler(n: int, batch_size: int, seed: int) -> Callable[[int], list[int]]:
    """Step -> the indices of its batch: each epoch a fresh permutation of ``n`` items (seeded by
    ``seed`` and the epoch), read in order, so a step's batch is a pure function of the step."""
    perms: dict[int, list[int]] = {}

    def at(step: int) -> list[int]:
        out = []
        for k in range(step * batch_size, (step + 1) * batch_size):
            epoch, offset = divmod(k, n)
            if epoch not in perms:
                perms.clear()  # one epoch's order at a time (a batch spans at most two)
                perms[epoch] = np.random.default_rng([seed, epoch]).permutation(n).tolist()
            out.append(perms[epoch][offset])
        return out

    return at
