"""DDP or DeepSpeed ZeRO-2 behind one small interface.

Both run one optimiser step over ``grad_accum`` micro-batches with
``train_step(micro_batches, lr, compute_loss)`` (the learning rate comes from the caller:
one schedule for both backends), evaluate with ``forward``, and save / restore their
optimiser state inside a checkpoint directory:

- ``ddp``: ``torch.nn.parallel.DistributedDataParallel`` (plain module with one worker)
  and the job's torch optimiser (`OPTIMIZERS`); rank 0 writes ``optimizer.pt``. ``precision=bf16`` holds
  the frozen weights in bf16 (`stages.common.device.FrozenInLowPrecision`; back in fp32 for an
  export) and runs each loss computation under bf16 autocast; the trained weights and the optimiser
  state stay fp32;
  ``max_grad_norm`` clips with ``clip_grad_norm_`` before the step.
- ``deepspeed``: ``deepspeed.initialize`` with ZeRO stage 2 and DeepSpeed's Adam in
  ``torch_adam`` mode (no fused-Adam compile, so it runs on CPU over gloo, see
  docs/environment-notes.md), ``adam_w_mode`` set from the job (`OPTIMIZERS`: DeepSpeed's
  own default would turn ``adam`` into AdamW); every rank writes its optimiser shard under ``ds/``.
  ``precision=bf16`` is DeepSpeed's ``bf16`` (bf16 weights, fp32 master copy in the
  optimiser); ``max_grad_norm`` is its ``gradient_clipping``. DeepSpeed is imported
  lazily: importing it on CPU nodes has crashed Ray Train controllers. A resume reads
  DeepSpeed's files weights-only (`stages.training.deepspeed_checkpoints`): DeepSpeed's own
  reader would unpickle any object found under the artifact root.

The model arrives on the worker's device (the loop puts it there, and its batches); DDP
wraps it there (``device_ids`` on CUDA).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
import torch.distributed as dist
from torch import nn

from stages.common.device import FrozenInLowPrecision, autocast
from stages.training.deepspeed_checkpoints import use_weights_only_loads

if TYPE_CHECKING:
    from stages.config.job import TrainJob

DS_TAG = "ds"
LossFn = Callable[[nn.Module, dict], torch.Tensor]


@dataclass(frozen=True)
class Optimizer:
    """One ``TrainJob.optimizer`` value as each backend builds it."""

    torch_class: type[torch.optim.Adam]  # ddp (AdamW is an Adam: the same arguments)
    adam_w_mode: bool  # deepspeed (torch_adam: torch.optim.AdamW if True, else torch.optim.Adam)


# One value, one optimiser on both backends: ``adam`` adds weight_decay to the gradient
# (coupled L2, torch.optim.Adam); ``adamw`` decays the weights apart from the Adam update.
OPTIMIZERS: dict[str, Optimizer] = {
    "adam": Optimizer(torch.optim.Adam, adam_w_mode=False),
    "adamw": Optimizer(torch.optim.AdamW, adam_w_mode=True),
}


def optimizer_of(job: TrainJob) -> Optimizer:
    """The optimiser ``job.optimizer`` names (the config schema checks the value first)."""
    if job.optimizer not in OPTIMIZERS:
        raise ValueError(f"optimizer: value {job.optimizer!r} is not one of {sorted(OPTIMIZERS)}")
    return OPTIMIZERS[job.optimizer]


def _set_lr(optimizer: Any, lr: float) -> None:
    for group in optimizer.param_groups:
        group["lr"] = lr


def _trainable(model: nn.Module) -> list[nn.Parameter]:
    return [p for p in model.parameters() if p.requires_grad]


class DDPEngine:
    def __init__(self, model: nn.Module, job: TrainJob, find_unused: bool, device: torch.device) -> None:
        self.module = model
        self.device = device
        self.precision = job.precision
        self.max_grad_norm = job.max_grad_norm
        distributed = dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1
        device_ids = [device.index] if device.type == "cuda" else None
        self.wrapped: nn.Module = (
            nn.parallel.DistributedDataParallel(model, device_ids=device_ids, find_unused_parameters=find_unused)
            if distributed
            else model
        )
        self.optimizer = optimizer_of(job).torch_class(
            _trainable(model), lr=job.lr, betas=(job.betas[0], job.betas[1]), weight_decay=job.weight_decay
        )
        # after DDP's broadcast of the module's state at wrap time: every rank casts its own frozen
        # copy (the frozen weights are in no gradient bucket)
        self.frozen = FrozenInLowPrecision(model, job.precision)

    def autocast(self) -> Any:
        """The precision context of a forward pass and its loss (``precision=bf16``: autocast)."""
        return autocast(self.device, self.precision)

    def exporting(self) -> contextlib.AbstractContextManager[None]:
        """The block of an export: every weight in fp32 (``precision=bf16`` holds the frozen ones in bf16)."""
        return self.frozen.full_precision()

    def forward(self, **batch: Any) -> Any:
        return self.wrapped(**batch)

    def train_step(self, micro_batches: list[dict], lr: float, compute_loss: LossFn) -> float:
        _set_lr(self.optimizer, lr)
        total = 0.0
        for batch in micro_batches:
            with self.autocast():
                loss = compute_loss(self.wrapped, batch)
            (loss / len(micro_batches)).backward()
            total += loss.item()
        if self.max_grad_norm is not None:
            torch.nn.utils.clip_grad_norm_(_trainable(self.module), self.max_grad_norm)
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        return total / len(micro_batches)

    def save(self, directory: Path, rank: int) -> None:
        if rank == 0:
            torch.save(self.optimizer.state_dict(), directory / "optimizer.pt")

    def load(self, directory: Path) -> None:
        state = torch.load(directory / "optimizer.pt", map_location="cpu", weights_only=True)
        self.optimizer.load_state_dict(state)


def deepspeed_config(job: TrainJob) -> dict[str, Any]:
    """The DeepSpeed config of a `TrainJob` (ZeRO-2; precision and clipping from the job)."""
    return {
        "train_micro_batch_size_per_gpu": job.batch_size,
        "gradient_accumulation_steps": job.grad_accum,
        "zero_optimization": {"stage": 2},
        "bf16": {"enabled": job.precision == "bf16"},
        "gradient_clipping": float(job.max_grad_norm or 0.0),  # 0 = off in DeepSpeed
        "optimizer": {
            "type": "Adam",
            "params": {
                "lr": job.lr,
                "betas": list(job.betas),
                "weight_decay": job.weight_decay,
                "torch_adam": True,
                "adam_w_mode": optimizer_of(job).adam_w_mode,  # DeepSpeed's default (True) is AdamW
            },
        },
        "steps_per_print": 10**9,
        "wall_clock_breakdown": False,
    }


class DeepSpeedEngine:
    def __init__(self, model: nn.Module, job: TrainJob, device: torch.device) -> None:
        if device.type != "cuda":
            os.environ.setdefault("DS_ACCELERATOR", "cpu")
        import deepspeed

        config = deepspeed_config(job)
        self.engine, self.optimizer, _, _ = deepspeed.initialize(
            model=model, model_parameters=_trainable(model), config=config
        )
        use_weights_only_loads(self.engine)  # before any load_checkpoint
        self.module = model
        self.device = device

    def autocast(self) -> Any:
        """DeepSpeed's bf16 holds bf16 weights itself: nothing to add around a forward."""
        return contextlib.nullcontext()

    def exporting(self) -> contextlib.AbstractContextManager[None]:
        """Nothing to change for an export (DeepSpeed's module holds the weights it trains)."""
        return contextlib.nullcontext()

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


Engine = DDPEngine | DeepSpeedEngine  # what `make_engine` returns: the interface the loop uses


def make_engine(model: nn.Module, job: TrainJob, find_unused: bool, device: torch.device) -> Engine:
    """The job's backend around ``model`` (already on ``device``)."""
    if job.backend == "deepspeed":
        return DeepSpeedEngine(model, job, device)
    return DDPEngine(model, job, find_unused, device)
