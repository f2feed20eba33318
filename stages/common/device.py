"""Where tensors live and in which precision: the one helper every stage uses.

- `resolve_device` turns the ``run.device`` setting into a `torch.device` inside the Ray
  task that will use it: ``auto`` is CUDA when that task was given a GPU (Ray sets
  ``CUDA_VISIBLE_DEVICES`` to the GPUs it granted; a task given none sees none), else the
  CPU. ``cuda`` where no GPU is visible is an error, never a silent CPU run.
- `to_device` moves a batch (tensors inside dicts, lists, tuples, dataclasses; anything
  else is returned as is) to a device. No stage moves tensors any other way.
- `dtype_of` maps a precision name (``fp32`` / ``bf16`` / ``fp16``) to a torch dtype;
  `autocast` is the mixed-precision context of a forward pass for that name (a no-op for
  ``fp32``), on CPU as on CUDA.
- `synchronize` makes a wall-clock reading after CUDA work honest.
- `place_model` puts an inference model on its device in its evaluation dtype, in eval mode.
- `FrozenInLowPrecision` holds a training model's frozen weights in bf16 (what ``precision=bf16``
  means for DDP) and gives them back in fp32 for an export.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
from collections.abc import Iterator
from typing import Any

import torch

DEVICE_CHOICES = ("auto", "cpu", "cuda")
PRECISIONS = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}


def cuda_visible() -> bool:
    """Whether this process can use a GPU (Ray hides the ones it did not grant)."""
    return torch.cuda.is_available() and torch.cuda.device_count() > 0


def resolve_device(setting: str, field: str = "run.device") -> torch.device:
    """``auto`` / ``cpu`` / ``cuda`` / ``cuda:N`` -> a device this process can use."""
    if setting == "auto":
        return torch.device("cuda", torch.cuda.current_device()) if cuda_visible() else torch.device("cpu")
    if setting == "cpu":
        return torch.device("cpu")
    if setting == "cuda" or setting.startswith("cuda:"):
        if not cuda_visible():
            granted = os.environ.get("CUDA_VISIBLE_DEVICES")
            raise RuntimeError(
                f"{field}={setting!r} but this process sees no CUDA device "
                f"(torch {torch.__version__}, CUDA_VISIBLE_DEVICES={granted!r}); use {field}=auto or cpu"
            )
        device = torch.device(setting)
        return torch.device("cuda", torch.cuda.current_device()) if device.index is None else device
    raise ValueError(f"{field}: value {setting!r} is not one of {list(DEVICE_CHOICES)} or cuda:N")


def to_device(obj: Any, device: torch.device | str, non_blocking: bool = False) -> Any:
    """``obj`` with every tensor in it on ``device`` (dtypes unchanged). Containers are
    rebuilt (dict, list, tuple, named tuple, dataclass); other values are returned as is."""
    if isinstance(obj, torch.Tensor):
        return obj.to(device, non_blocking=non_blocking)
    if isinstance(obj, dict):
        return type(obj)((k, to_device(v, device, non_blocking)) for k, v in obj.items())
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):  # a named tuple
        return type(obj)(*(to_device(v, device, non_blocking) for v in obj))
    if isinstance(obj, list | tuple):
        return type(obj)(to_device(v, device, non_blocking) for v in obj)
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        changes = {f.name: to_device(getattr(obj, f.name), device, non_blocking)
                   for f in dataclasses.fields(obj) if f.init}
        return dataclasses.replace(obj, **changes)
    return obj


def dtype_of(precision: str, field: str = "precision") -> torch.dtype:
    if precision not in PRECISIONS:
        raise ValueError(f"{field}: value {precision!r} is not one of {sorted(PRECISIONS)}")
    return PRECISIONS[precision]


def autocast(device: torch.device | str, precision: str) -> contextlib.AbstractContextManager:
    """Mixed precision for a forward pass: ``bf16`` / ``fp16`` autocast on ``device``'s
    type (weights stay fp32, matmuls run in the low precision); ``fp32``: nothing."""
    dtype = dtype_of(precision)
    if dtype == torch.float32:
        return contextlib.nullcontext()
    return torch.autocast(device_type=torch.device(device).type, dtype=dtype)


def synchronize(device: torch.device | str) -> None:
    """Wait for the kernels queued on a CUDA ``device`` (before reading a wall clock);
    nothing on the CPU."""
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize(device)


class FrozenInLowPrecision:
    """A training model's frozen floating-point parameters held in a low precision.

    Under autocast every matmul casts its fp32 weight to bf16 on each call; a frozen weight
    never changes, so holding it in bf16 once saves that copy (and half its memory) on every
    forward and backward: the base LM of a LoRA job is nearly all of its weights. The trained
    parameters stay fp32 (the optimiser steps them and keeps its state in fp32). Buffers are
    left as they are (rotary frequencies, position ids: fp32 or integer by design).

    `full_precision` gives the frozen weights back in fp32 for the block of an export, so a
    saved model is fp32 like every other (the values are the bf16 ones the training read),
    then holds them in the low precision again; a bf16 value survives the round trip exactly.
    """

    def __init__(self, model: torch.nn.Module, precision: str) -> None:
        self.dtype = dtype_of(precision)
        self.params = [p for p in model.parameters()
                       if not p.requires_grad and p.is_floating_point() and p.dtype == torch.float32]
        if self.dtype != torch.float32:
            self._cast(self.dtype)

    def _cast(self, dtype: torch.dtype) -> None:
        for p in self.params:
            p.data = p.data.to(dtype)

    @contextlib.contextmanager
    def full_precision(self) -> Iterator[None]:
        """The frozen weights in fp32 inside the block (a no-op for fp32)."""
        if self.dtype == torch.float32:
            yield
            return
        self._cast(torch.float32)
        try:
            yield
        finally:
            self._cast(self.dtype)


def place_model(model: torch.nn.Module, device: torch.device | str, precision: str = "fp32") -> Any:
    """``model`` in eval mode on ``device`` with its floating-point weights in ``precision``."""
    return model.to(device=torch.device(device), dtype=dtype_of(precision)).eval()
