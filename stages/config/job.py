"""What every training job section shares (``train.<job>``): `TrainJob`, the base of each study's job
sections (Ray Train workers, optimiser, schedule, checkpoints, early stopping, precision)."""

from __future__ import annotations

from dataclasses import dataclass

from stages.config.precision import PRECISION_CHOICES
from stages.config.validate import spec


@dataclass
class TrainJob:
    backend: str = spec("ddp", help="ddp (torch DDP) or deepspeed (ZeRO-2).", choices=("ddp", "deepspeed"))
    num_workers: int = spec(1, help="Ray Train workers.", ge=1)
    use_gpu: bool = spec(False, help="One GPU per worker.")
    precision: str = spec(
        "fp32", help="fp32; bf16 (ddp: frozen weights held in bf16, trained weights and optimiser state in fp32, "
        "forward under bf16 autocast; deepspeed: DeepSpeed's bf16); auto: bf16 on a GPU (use_gpu) or a CPU with "
        "bf16 matrix instructions, else fp32, decided when the config loads (stages/config/precision.py).",
        choices=PRECISION_CHOICES,
    )
    lr: float = spec(5e-5, help="Peak learning rate.", gt=0.0)
    optimizer: str = spec(
        "adam", help="adam: Adam with weight_decay as an L2 term added to the gradient (torch.optim.Adam); "
        "adamw: decoupled weight decay (AdamW). The same optimiser on both backends (DeepSpeed's adam_w_mode "
        "is set from it).",
        choices=("adam", "adamw"),
    )
    betas: list[float] = spec([0.9, 0.999], help="Adam betas.")
    weight_decay: float = spec(0.0, help="Weight decay.", ge=0.0)
    schedule: str = spec(
        "constant", help="LR schedule after the warm-up: constant, cosine or linear decay to 0 at max_steps.",
        choices=("constant", "cosine", "linear"),
    )
    warmup_steps: int = spec(0, help="Linear warm-up steps.", ge=0)
    max_steps: int = spec(1000, help="Optimiser steps.", ge=1)
    batch_size: int = spec(16, help="Sequences per worker per step.", ge=1)
    grad_accum: int = spec(1, help="Gradient accumulation steps.", ge=1)
    group_by_length: bool = spec(
        False, help="Batches of similar-length examples (sorted within windows of 50 batches, the windows' "
        "batches shuffled): less padding, same examples per epoch. Only tasks that define example_length."
    )
    max_grad_norm: float | None = spec(
        None, help="Clip the global gradient norm to this (both backends); null = no clipping.", gt=0.0
    )
    eval_every: int = spec(100, help="Steps between dev evaluations.", ge=1)
    checkpoint_every: int = spec(100, help="Steps between checkpoints.", ge=1)
    early_stopping_patience: int = spec(0, help="Dev evals without improvement before stopping (0 = off).", ge=0)
    export_model: str = spec(
        "final", help="The weights a fit ends with: final = its last step's; best_dev = its lowest-dev-loss "
        "evaluation's (with early_stopping_patience: training 'until convergence on the dev set', the best "
        "checkpoint kept; one copy of the trainable parameters per improving evaluation in the fit's storage).",
        choices=("final", "best_dev"),
    )
    dev_examples: int = spec(256, help="Dev examples per evaluation (0 = all).", ge=0)
    log_every: int = spec(
        1, help="Steps between train_loss / lr / tokens_per_s logs (rank 0, batched: cheap).", ge=1
    )
    max_failures: int = spec(1, help="Worker-group restarts from the last checkpoint.", ge=0)

    def cross_field_errors(self) -> list[str]:
        if len(self.betas) != 2 or not all(0.0 <= b < 1.0 for b in self.betas):
            return [f"betas: value {self.betas!r} must be two numbers in [0, 1)"]
        return []

    def examples_per_step(self) -> int:
        """Examples per optimiser step: every worker, every accumulation step."""
        return self.batch_size * self.num_workers * self.grad_accum

    def stopping_rule(self) -> str:
        """When this job's training ends and which weights it keeps, in words: two systems
        whose rules read alike had the same budget (the report's comparisons rest on it)."""
        batch = self.examples_per_step()
        stop = (f"until {self.early_stopping_patience} dev evaluations (every {self.eval_every} steps) without a "
                f"lower loss, at most {self.max_steps} steps" if self.early_stopping_patience
                else f"{self.max_steps} steps (dev loss every {self.eval_every})")
        kept = "the best dev evaluation's weights" if self.export_model == "best_dev" else "the last step's weights"
        return f"{stop} of {batch} examples, dev loss on {self.dev_examples or 'all'} dev examples, {kept}"
