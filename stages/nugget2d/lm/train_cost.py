"""One training step of Nugget2D vs one of Full fine-tuning, same tokens (eval_efficiency).

Both systems train LoRA adapters of the same configuration (the Nugget2D model's rank, alpha
and target modules: what train_full_ft gives Full) with AdamW on one batch of ``document |
prompt | answer``, the loss on the answer:

- ``nugget2d``: the fine-tuning objective (`nugget_core.nugget2d.objectives`, phi, theta and the
  scorer trained) in the model's own training pass (joint by default);
- ``full_ft``: the base LM with one adapter on the concatenated text (labels -100 but on the
  answer), as train_full_ft's task computes it.

Per system: seconds per step (the mean of ``steps`` after one untimed step), the trainable
parameters, the bytes of the activations one step's forward keeps for backward (distinct
storages that are no weight: a count of tensors, the same on every device) and, on CUDA, the
peak of allocated memory over the timed steps.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch

from stages.common.device import synchronize

if TYPE_CHECKING:
    from nugget_core.nugget2d import Nugget2DModel

TRAIN_SYSTEMS = ("full_ft", "nugget2d")


@dataclass(frozen=True)
class TrainCost:
    system: str
    step_s: list[float]
    trainable: int
    activation_bytes: int
    peak_bytes: int | None  # CUDA max_memory_allocated over the timed steps; None off CUDA

    @property
    def mean_s(self) -> float:
        return sum(self.step_s) / len(self.step_s)


def _kept_for_backward(loss_of: Callable[[], torch.Tensor], model: torch.nn.Module) -> int:
    """Bytes of the distinct non-weight storages autograd saves during one forward."""
    weights = {p.untyped_storage().data_ptr() for p in model.parameters()}
    saved: dict[int, int] = {}

    def pack(t: torch.Tensor) -> torch.Tensor:
        storage = t.untyped_storage()
        if storage.data_ptr() not in weights:
            saved[storage.data_ptr()] = storage.nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        loss = loss_of()
    del loss
    return sum(saved.values())


def _steps(model: torch.nn.Module, params: list[torch.nn.Parameter], loss_of: Callable[[], torch.Tensor],
           steps: int, device: torch.device, system: str) -> TrainCost:
    optimizer = torch.optim.AdamW(params, lr=1e-5)
    model.train()
    times = []
    cuda = device.type == "cuda"
    for step in range(1 + steps):
        if cuda and step == 1:
            torch.cuda.reset_peak_memory_stats(device)
        synchronize(device)
        start = time.perf_counter()
        loss_of().backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        synchronize(device)
        if step:
            times.append(time.perf_counter() - start)
    peak = int(torch.cuda.max_memory_allocated(device)) if cuda else None
    activations = _kept_for_backward(loss_of, model)
    model.eval()
    return TrainCost(system, times, sum(p.numel() for p in params), activations, peak)


def _full_ft_cost(full: Any, ids: torch.Tensor, context: int, steps: int, device: torch.device) -> TrainCost:
    """Full FT's steps: ``full`` (the base LM with its one adapter) on ``ids``, the loss on what
    follows the first ``context`` tokens; the model is freed on return, before Nugget2D's steps."""
    for name, p in full.named_parameters():
        p.requires_grad_("lora_" in name)
    labels = ids.clone()
    labels[:, :context] = -100
    return _steps(full, [p for p in full.parameters() if p.requires_grad],
                  lambda: full(input_ids=ids, labels=labels).loss, steps, device, "full_ft")


def train_costs(model: Nugget2DModel, base_lm: Any, ids: torch.Tensor, prompt: int, answer: int, steps: int
                ) -> list[TrainCost]:
    """Full FT's and Nugget2D's step on ``ids [batch, doc + prompt + answer]`` (module docstring).
    ``base_lm``: a fresh copy of the base LM (Full FT's adapter goes into it), on the model's
    device and dtype. Changes ``model``'s trainable parameters: run it after everything else."""
    from peft import get_peft_model

    from nugget_core.nugget2d.adapters import lora_config
    from nugget_core.nugget2d.objectives import objective_loss, set_objective

    device = model.device
    ids = ids.to(device)
    doc = ids.shape[1] - prompt - answer
    if doc < 1:
        raise ValueError(f"train_costs: {ids.shape[1]} tokens leave no document before {prompt} + {answer}")
    full_cost = _full_ft_cost(get_peft_model(base_lm, lora_config(model.config)), ids, doc + prompt, steps, device)
    chunks = {"doc": ids[:, :doc], "prompt": ids[:, doc : doc + prompt], "answer": ids[:, doc + prompt :]}
    batch = {**{f"{k}_ids": v for k, v in chunks.items()}, **{f"{k}_mask": torch.ones_like(v) for k, v in chunks.items()}}
    params = set_objective(model, "finetune")
    nugget_cost = _steps(model, params, lambda: objective_loss(model, "finetune", batch).loss, steps, device,
                         "nugget2d")
    return [full_cost, nugget_cost]
