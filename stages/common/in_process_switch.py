"""The switch of in-process training (`stages.training.session`), torch-free so that a pipeline
driver can pass it on without importing torch or Ray Train.

A training job of one CPU worker (``num_workers=1``, no GPU, ``backend=ddp``) trains in the
process that asks for the fit (the stage's task, a Tune trial) unless ``NUGGET_TRAIN_IN_PROCESS``
is ``0`` / ``false`` / ``no``: then every fit starts a ``TorchTrainer`` worker group, as a job of
several workers always does.
"""

from __future__ import annotations

import os

ENV = "NUGGET_TRAIN_IN_PROCESS"


def enabled() -> bool:
    """Whether one-worker CPU fits train in process (the default; module docstring)."""
    return os.environ.get(ENV, "1").strip().lower() not in ("0", "false", "no")


def runtime_env_vars() -> dict[str, str]:
    """For a stage task's runtime env: the switch as this process has it, where it was set
    (workers of a head started elsewhere do not inherit the driver's environment)."""
    return {ENV: os.environ[ENV]} if ENV in os.environ else {}
