"""DeepSpeed checkpoints read back without unpickling arbitrary objects.

DeepSpeed 0.19's ``TorchCheckpointEngine.load`` calls ``torch.load(path,
weights_only=False)``. A training stage resumes from its Ray Train checkpoint under the
artifact root (the stage's ``work_uri``, `stages.training.storage`), so anyone who can write
there could make a resume run the callables they pickled. ``engine.load_checkpoint`` has
no ``weights_only``-like argument (``load_module_only`` only skips the optimiser), but
every file it reads goes through the engine's ``checkpoint_engine``.
`use_weights_only_loads` swaps that for one whose ``load`` is `load_weights_only`:
``torch.load(weights_only=True)``, admitting tensors and plain containers plus the three
DeepSpeed classes that a ZeRO-2 checkpoint holds (`CHECKPOINT_CLASSES`, found with
``torch.serialization.get_unsafe_globals_in_checkpoint`` on DeepSpeed 0.19.8 fp32 and bf16
checkpoints). The unpickler builds those from their fields without calling anything else.
A file that needs any other global fails with `UnsafeCheckpointError`, naming the file
and the global, and nothing in it runs. Saving is DeepSpeed's own, unchanged.
"""

from __future__ import annotations

import importlib
import pickle
from collections.abc import Callable, Sequence
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

if TYPE_CHECKING:
    from deepspeed import DeepSpeedEngine
    from deepspeed.runtime.checkpoint_engine.torch_checkpoint_engine import TorchCheckpointEngine

# (module, name) of the non-tensor classes DeepSpeed 0.19.8 pickles into ZeRO-2 checkpoints
CHECKPOINT_CLASSES = (
    ("deepspeed.runtime.zero.config", "ZeroStageEnum"),
    ("deepspeed.runtime.fp16.loss_scaler", "LossScaler"),
    ("deepspeed.utils.tensor_fragment", "fragment_address"),
)


class UnsafeCheckpointError(pickle.UnpicklingError):
    """A checkpoint file holds an object that a weights-only load does not admit."""


def checkpoint_classes() -> list[type]:
    """The classes of `CHECKPOINT_CLASSES` (imports deepspeed)."""
    return [getattr(importlib.import_module(module), name) for module, name in CHECKPOINT_CLASSES]


def load_weights_only(path: str | Path, map_location: Any = None, allowed: Sequence[type] | None = None) -> Any:
    """``torch.load(path, weights_only=True)`` admitting ``allowed`` classes (default: the
    DeepSpeed `CHECKPOINT_CLASSES`) besides tensors and plain containers."""
    # torch.serialization.safe_globals takes a list of classes or (class, name) pairs
    admitted: list[Callable[..., Any] | tuple[Callable[..., Any], str]] = list(
        checkpoint_classes() if allowed is None else allowed)
    try:
        with torch.serialization.safe_globals(admitted):
            return torch.load(path, map_location=map_location, weights_only=True)
    except pickle.UnpicklingError as exc:
        # torch's message advises weights_only=False first; keep only the line naming the global
        said = next((line.strip() for line in str(exc).splitlines() if "WeightsUnpickler error" in line),
                    str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
        raise UnsafeCheckpointError(
            f"refusing to resume from {path}: it holds an object a weights-only load does not admit "
            f"(allowed besides tensors: {', '.join(f'{m}.{n}' for m, n in CHECKPOINT_CLASSES)}). A newer "
            f"DeepSpeed may pickle another class (add it to CHECKPOINT_CLASSES after checking it), or the "
            f"file was not written by DeepSpeed. {said}"
        ) from exc


@cache
def _weights_only_engine() -> type[TorchCheckpointEngine]:
    """DeepSpeed's ``TorchCheckpointEngine`` with `load_weights_only` as its ``load``."""
    from deepspeed.runtime.checkpoint_engine.torch_checkpoint_engine import TorchCheckpointEngine

    class WeightsOnlyCheckpointEngine(TorchCheckpointEngine):
        def load(self, path: str, map_location: Any = None) -> Any:
            return load_weights_only(path, map_location)

    return WeightsOnlyCheckpointEngine


def use_weights_only_loads(engine: DeepSpeedEngine) -> None:
    """Make every checkpoint read of a DeepSpeed ``engine`` weights-only (its settings,
    e.g. the zipfile serialisation of saves, kept). Refuses an engine whose checkpoint
    engine is not DeepSpeed's plain torch one (a config selecting another writer), rather
    than leave its loads unchecked."""
    from deepspeed.runtime.checkpoint_engine.torch_checkpoint_engine import TorchCheckpointEngine

    current = engine.checkpoint_engine
    if type(current) is not TorchCheckpointEngine:
        raise TypeError(f"DeepSpeed checkpoint engine {type(current).__name__}: only TorchCheckpointEngine "
                        "can be made to load weights-only (stages.training.deepspeed_checkpoints)")
    safe = object.__new__(_weights_only_engine())  # no __init__: the current engine's settings are copied in
    safe.__dict__.update(current.__dict__)
    engine.checkpoint_engine = safe
