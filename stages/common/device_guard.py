"""Device discipline: fail where project code makes a tensor without naming its device.

A tensor made by a factory call (``torch.zeros(n)``, ``torch.arange(n)``, ``torch.tensor(x)``,
...) without ``device=`` lands on the default device: the CPU, whatever device the model
lives on. On a CPU-only machine that is invisible; on a GPU it is a device-mismatch error or
a silent host round trip in a hot loop. `DeviceGuard` is a ``TorchFunctionMode`` that sees
every factory call, walks back from it to the first frame outside torch, and raises
`DeviceDisciplineError` when that frame is in one of the project's packages and the call
named no device. Calls made inside libraries (transformers' ``StaticCache``, peft,
DeepSpeed) are theirs to place and are not checked: the check looks only at code whose file
lies under a checked package, never at who called the library.

So the rule it enforces is the project's: every tensor lives on a declared device
(``device=x.device``, ``device=self.device``, or ``device="cpu"`` where host memory is the
intent, e.g. a collate function's batch). A module's ``__init__`` making its parameters and
buffers is exempt: they move with the module. ``*_like`` and ``Tensor.new_*`` take their
device from a tensor and are never flagged; ``torch.from_numpy`` always returns host memory
and is not a default-device call.

Where it runs: with ``NUGGET_DEVICE_GUARD=1`` in the environment, every pipeline stage
(`stages.framework.worker`) and every training worker (`stages.training.loop.train_task`)
runs under `from_env`; the test suite sets it for its own process and its Ray workers, and
runs the GPU tests' code paths on the CPU with it (``tests/device_discipline``).
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

import torch
from torch.overrides import TorchFunctionMode

from stages.common.device_guard_switch import ENV, enabled

__all__ = ["ENV", "DeviceDisciplineError", "DeviceGuard", "Violation", "enabled", "from_env", "guarded"]

REPO = Path(__file__).resolve().parents[2]
# the packages whose code must name devices; benchmarks and tests build inputs freely
CHECKED_PACKAGES = ("nugget_core", "stages", "pipelines")
# the factories whose result lands on the default device unless told otherwise (the calls
# torch.set_default_device redirects, less those that copy a tensor's device)
FACTORIES = frozenset({
    torch.arange, torch.empty, torch.empty_strided, torch.eye, torch.full, torch.linspace,
    torch.logspace, torch.ones, torch.rand, torch.randint, torch.randn, torch.randperm,
    torch.range, torch.scalar_tensor, torch.tensor, torch.as_tensor, torch.asarray,
    torch.tril_indices, torch.triu_indices, torch.zeros, torch.sparse_coo_tensor,
})
# data-copying factories keep the device of a tensor they are given
_COPYING = frozenset({torch.tensor, torch.as_tensor, torch.asarray})
_TORCH_DIR = str(Path(torch.__file__).resolve().parent)
_THIS_FILE = str(Path(__file__).resolve())


class DeviceDisciplineError(RuntimeError):
    """Project code made a tensor on the default device without naming one."""


@dataclass(frozen=True)
class Violation:
    """One device-less factory call: where, and what."""

    file: str
    line: int
    function: str
    factory: str

    def __str__(self) -> str:
        return (f"{self.file}:{self.line} in {self.function}: torch.{self.factory}(...) names no device "
                f"(pass device=...; device='cpu' where host memory is meant)")


def _checked_roots(packages: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(str(REPO / p) + os.sep for p in packages)


def _caller(frame: FrameType | None) -> tuple[FrameType | None, bool]:
    """The first frame outside torch and this module (the code that asked for the tensor),
    and whether the call is a module's ``__init__`` making its state on the way there."""
    while frame is not None:
        if _module_state(frame):
            return frame, True
        name = frame.f_code.co_filename
        if not name.startswith(_TORCH_DIR) and name != _THIS_FILE:
            return frame, False
        frame = frame.f_back
    return None, False


def _module_state(frame: FrameType) -> bool:
    """A module's ``__init__`` (ours or torch's, e.g. an ``nn.TransformerEncoderLayer`` we
    build) making its parameters and buffers: they follow ``.to(device)`` with the module."""
    return frame.f_code.co_name == "__init__" and isinstance(frame.f_locals.get("self"), torch.nn.Module)


def _names_device(func: Any, args: tuple, kwargs: dict) -> bool:
    if kwargs.get("device") is not None:
        return True
    if func in _COPYING and args and isinstance(args[0], torch.Tensor):
        return True  # a copy of a tensor stays on its device
    return False


class DeviceGuard(TorchFunctionMode):
    """Raises `DeviceDisciplineError` (and records a `Violation`) for every factory call
    without ``device=`` made from a file under ``packages`` (repo-relative package names)."""

    def __init__(self, packages: tuple[str, ...] = CHECKED_PACKAGES) -> None:
        super().__init__()
        self.roots = _checked_roots(packages)
        self.violations: list[Violation] = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in FACTORIES and not _names_device(func, args, kwargs):
            frame, module_state = _caller(sys._getframe(1))
            if frame is not None and not module_state and frame.f_code.co_filename.startswith(self.roots):
                found = Violation(frame.f_code.co_filename, frame.f_lineno, frame.f_code.co_name, func.__name__)
                self.violations.append(found)
                raise DeviceDisciplineError(str(found))
        return func(*args, **kwargs)


_ACTIVE = threading.local()


@contextmanager
def guarded() -> Iterator[DeviceGuard]:
    """The guard, active on this thread for the block (nested uses share the outer one:
    a stage that runs a training loop in-process is not guarded twice)."""
    outer = getattr(_ACTIVE, "guard", None)
    if outer is not None:
        yield outer
        return
    guard = DeviceGuard()
    _ACTIVE.guard = guard
    try:
        with guard:
            yield guard
    finally:
        _ACTIVE.guard = None


def from_env() -> AbstractContextManager[Any]:
    """`guarded()` where ``NUGGET_DEVICE_GUARD`` is set, else a no-op context."""
    return guarded() if enabled() else nullcontext()
