"""The GPUs a run asks for, checked before Ray starts (`stages.framework.plan_checks`).

``run.device=cuda`` on a machine without a GPU would pass ``--dry-run`` and fail only once
Ray had started (the executor's `stages.framework.resources.check_fits`, exit 1). Here the
same demand test runs in the preflight, against the GPUs the run will have:

- a local run (no ``run.ray_address``, no ``$RAY_ADDRESS``): its private Ray gets this
  machine's GPUs, the CUDA devices torch sees (``torch.cuda.device_count()``, which
  honours ``CUDA_VISIBLE_DEVICES``; a CPU-only torch sees none, and could not use one);
- ``$NUGGET_CLUSTER_RESOURCES`` set (an autoscaling cluster's reach): those GPUs, local or not;
- a cluster otherwise: not checked here. The driver of ``ray job submit`` may run on a head
  without GPUs while the workers have them, so what this machine sees says nothing; the
  executor checks the cluster's own ``ray.cluster_resources()`` as soon as it connects,
  before any stage starts.

Every planned stage's demand counts (`stages.framework.devices.with_device`): the GPU of a
``uses_device`` stage's own task under ``run.device``, and the ``num_workers`` GPUs of a
training job with ``train.<job>.use_gpu``. torch is imported only when some stage to run
asks for a GPU.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import TYPE_CHECKING

from stages.framework.devices import wants_gpu, with_device
from stages.framework.keys import stage_sections
from stages.framework.preflight import CONFIG, Problem
from stages.framework.resources import CAPACITY_ENV, cluster_capacity, section_value

if TYPE_CHECKING:
    from stages.config.schema import PipelineConfig
    from stages.framework.stage import Stage


def local_gpus() -> float:
    """The CUDA devices torch sees on this machine (0 without torch or CUDA)."""
    try:
        import torch
    except ImportError:
        return 0.0
    return float(torch.cuda.device_count()) if torch.cuda.is_available() else 0.0


def gpu_capacity(cfg: PipelineConfig) -> tuple[float, str] | None:
    """(GPUs the run will have, where that number comes from), or None on a cluster whose
    GPUs this machine cannot know (see the module docstring)."""
    if os.environ.get(CAPACITY_ENV):
        return cluster_capacity().get("GPU", 0.0), f"${CAPACITY_ENV}"
    if cfg.run.ray_address or os.environ.get("RAY_ADDRESS"):
        return None
    return local_gpus(), "this machine (a local Ray; torch sees its CUDA devices)"


def _asks(stage: type[Stage], cfg: PipelineConfig) -> list[str]:
    """The settings under which ``stage`` asks for GPUs, as ``key=value`` (may be empty)."""
    found = []
    if wants_gpu(stage, cfg.run.device, {}) and cfg.run.device == "cuda":
        found.append(f"run.device={cfg.run.device!r}")
    if stage.train_job:
        job = section_value(stage_sections(stage, cfg), stage.train_job)
        if job.use_gpu:
            found.append(f"{stage.train_job}.use_gpu=true (num_workers={job.num_workers})")
    return found


def device_problems(cfg: PipelineConfig, running: Iterable[type[Stage]]) -> list[Problem]:
    """One problem per setting that makes stages to run (classes) ask for more GPUs than
    the run will have, naming the setting, the stages and what to set instead."""
    asking = [(s, keys) for s in running if (keys := _asks(s, cfg))]
    if not asking:
        return []
    known = gpu_capacity(cfg)
    if known is None:
        return []
    have, where = known
    short: dict[tuple[str, ...], dict[str, float]] = {}  # the settings that ask -> {stage: GPUs}
    for stage, keys in asking:
        need = with_device(stage.demand(stage_sections(stage, cfg)), stage, cfg.run.device, {"GPU": have})
        if need.get("GPU", 0.0) > have:
            short.setdefault(tuple(keys), {})[stage.name] = need["GPU"]
    found = []
    for settings, stages in short.items():
        fix = " / ".join("run.device=auto or cpu" if k.startswith("run.device") else k.split("=")[0] + "=false"
                         for k in settings)
        most = max(stages.values())
        found.append(Problem(CONFIG, f"{' and '.join(settings)}: {', '.join(stages)} "
                                     f"{'needs' if len(stages) == 1 else 'need'} {most:g} GPU(s) at once but {where} "
                                     f"has {have:g}; set {fix}, or run where the GPUs are"))
    return found
