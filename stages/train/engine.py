"""DDP or DeepSpeed ZeRO-2 behind one small interface.

Both run one optimiser step over ``grad_accum`` micro-batches with
``train_step(micro_batches, lr, compute_loss)`` (the learning rate comes from the caller:
one schedule for both backends), evaluate with ``forward``, and save / restore their
optimiser state inside a checkpoint directory:

- ``ddp``: ``torch.nn.parallel.DistributedDataParallel`` (plain module with one worker)
  and ``torch.optim.Adam``; rank 0 writes ``optimizer.pt``.
- ``deepspeed``: ``deepspeed.initialize`` with ZeRO stage 2 and DeepSpeed's Adam in
  ``torch_adam`` mode (no fused-Adam compile, so it runs on CPU over gloo, see
  docs/environment-notes.md); every rank writes its optimiser shard under ``ds/``. DeepSpeed is
  imported lazily: importing it on CPU nodes has crashed Ray Train controllers.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
from torch import nn

DS_TAG = "ds"
LossFn = Callable[[nn.Module, dict], torch.Tensor]


def _set_lr(optimizer: Any, lr: float) -> None:
    for group in optimizer.param_groups:
        group["lr"] = lr


def _trainable(model: nn.Module) -> list[nn.Parameter]:
    return [p for p in model.parameters() if p.requires_grad]


class DDPEngine:
    def __init__(self, model: nn.Module, job: Any, find_unused: bool) -> None:
        self.module = model
        distributed = dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1
        self.wrapped: nn.Module = (
            nn.parallel.DistributedDataParallel(model, find_unused_parameters=find_unused)
            if distributed
            else model
        )
        self.optimizer = torch.optim.Adam(
            _trainable(model), lr=job.lr, betas=tuple(job.betas), weight_decay=job.weight_decay
        )

    def forward(self, **batch: Any) -> Any:
        return self.wrapped(**batch)

    def train_step(self, micro_batches: list[dict], lr: float, compute_loss: LossFn) -> float:
        _set_lr(self.optimizer, lr)
        total = 0.0
        for batch in micro_batches:
            loss = compute_loss(self.wrapped, batch)
            (loss / len(micro_batches)).backward()
            total += loss.item()
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        return total / len(micro_batches)

    def save(self, directory: Path, rank: int) -> None:
        if rank == 0:
            torch.save(self.optimizer.state_dict(), directory / "optimizer.pt")

    def load(self, directory: Path) -> None:
        state = torch.load(directory / "optimizer.pt", map_location="cpu", weights_only=True)
        self.optimizer.load_state_dict(state)


class DeepSpeedEngine:
    def __init__(self, model: nn.Module, job: Any, use_gpu: bool) -> None:
        if not use_gpu:
            os.environ.setdefault("DS_ACCELERATOR", "cpu")
        import deepspeed

        config = {
            "train_micro_batch_size_per_gpu": job.batch_size,
            "gradient_accumulation_steps": job.grad_accum,
            "zero_optimization": {"stage": 2},
            "bf16": {"enabled": job.precision == "bf16"},
            "optimizer": {
                "type": "Adam",
                "params": {
                    "lr": job.lr,
                    "betas": list(job.betas),
                    "weight_decay": job.weight_decay,
                    "torch_adam": True,
                },
            },
            "steps_per_print": 10**9,
            "wall_clock_breakdown": False,
        }
        self.engine, self.optimizer, _, _ = deepspeed.initialize(
            model=model, model_parameters=_trainable(model), config=config
        )
        self.module = model

    def forward(self, **batch: Any) -> Any:
        return self.engine(**batch)

    def train_step(self, micro_batches: list[dict], lr: float, compute_loss: LossFn) -> float:
        _set_lr(self.optimizer, lr)
        total = 0.0
        for batch in micro_batches:
            loss = compute_loss(self.engine, batch)
            self.engine.backward(loss)  # DeepSpeed scales by 1/grad_accum itself
            self.engine.step()  # steps the optimiser only at the accumulation boundary
            total += loss.item()
        return total / len(micro_batches)

    def save(self, directory: Path, rank: int) -> None:
        self.engine.save_checkpoint(str(directory), tag=DS_TAG)

    def load(self, directory: Path) -> None:
        path, _ = self.engine.load_checkpoint(str(directory), tag=DS_TAG)
        if path is None:
            raise FileNotFoundError(f"no DeepSpeed checkpoint '{DS_TAG}' under {directory}")


def make_engine(model: nn.Module, job: Any, find_unused: bool) -> DDPEngine | DeepSpeedEngine:
    if job.backend == "deepspeed":
        return DeepSpeedEngine(model, job, job.use_gpu)
    return DDPEngine(model, job, find_unused)
