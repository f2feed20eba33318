"""Which stage tasks get a GPU, and the device a stage's models run on (``run.device``).

Ray Train places training (``train.*.use_gpu``). Every other stage that runs a model in its
own task declares ``Stage.uses_device``; for those, ``run.device``:

- ``cpu``: the task takes no GPU; ``ctx.device`` is ``cpu``;
- ``auto``: where the cluster has a GPU, the task asks Ray for one (``num_gpus=1``, which
  also enters the stage's demand in the scheduler's ledger) and ``ctx.device`` is that
  GPU; on a cluster without GPUs, ``cpu``;
- ``cuda``: as ``auto``, but a cluster without GPUs is an error before any stage starts.

The device is placement, not content: it is not part of a cache key (an fp32 evaluation
on GPU and on CPU agree within float tolerance; ``eval.dtype``, which changes results, is).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from stages.framework.resources import Demand, add

if TYPE_CHECKING:
    from stages.framework.stage import Stage


def wants_gpu(stage_cls: type[Stage], setting: str, capacity: Mapping[str, float]) -> bool:
    """Whether ``stage_cls``'s own task asks Ray for one GPU under ``run.device=setting``."""
    if not getattr(stage_cls, "uses_device", False) or setting == "cpu":
        return False
    return setting == "cuda" or capacity.get("GPU", 0.0) >= 1.0


def task_options(stage_cls: type[Stage], setting: str, capacity: Mapping[str, float]) -> dict[str, Any]:
    """Ray options of the task running ``stage_cls.run``: its ``resources`` (+ one GPU)."""
    options = dict(stage_cls.resources)
    if wants_gpu(stage_cls, setting, capacity):
        options["num_gpus"] = 1
    return options


def with_device(demand: Demand, stage_cls: type[Stage], setting: str, capacity: Mapping[str, float]) -> Demand:
    """``demand`` plus the GPU of ``stage_cls``'s own task, if it gets one."""
    if not wants_gpu(stage_cls, setting, capacity):
        return demand
    lower = "run.device (auto or cpu)" if capacity.get("GPU", 0.0) < 1.0 else demand.lower
    return Demand(add(demand, {"GPU": 1.0}), lower=lower)


def task_device(stage_cls: type[Stage], setting: str, granted_gpus: list[Any]) -> str:
    """The torch device string for ``ctx.device``, inside the stage's task: the GPU Ray
    granted it (``ray.get_gpu_ids()``), else ``cpu`` (``run.device=cuda`` without one fails)."""
    from stages.common.device import resolve_device

    if not getattr(stage_cls, "uses_device", False) or setting == "cpu":
        return "cpu"
    if setting == "auto" and not granted_gpus:
        return "cpu"
    return str(resolve_device("cuda"))
