"""A stage's estimated device cost (`StageCost`) and its device-hours on a device
(`timed`): compute-bound FLOPs at the device's peak FLOP/s times the trained-work share,
memory-bound bytes at its bandwidth times the decode share (`stages.costs.efficiency`).

Wall-clock on ``N`` devices: a training stage spreads its work data-parallel over at most
``max_devices`` of them (its examples per optimiser step, times the fits that can run at
once), at the stated scaling efficiency; any other stage runs on one device. Stages add up
one after another: the DAG's overlap of independent stages is not counted, so the total
wall-clock is an upper bound for the work estimated.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from stages.config.job import TrainJob
    from stages.costs.efficiency import Share
    from stages.costs.peaks import Peaks

TRAIN, EVAL, CPU, NONE = "train", "eval", "cpu", "not estimated"


@dataclass(frozen=True)
class Work:
    """One part of a stage's device work: ``flops`` of compute-bound work and ``nbytes``
    read by memory-bound decoding, with what was counted in words."""

    what: str
    flops: float = 0.0
    nbytes: float = 0.0


@dataclass(frozen=True)
class StageCost:
    """What one stage costs on devices. ``kind``: `TRAIN`, `EVAL`, `CPU` (no model runs on
    a device: ~0) or `NONE`. ``missing``: what is not estimated and why (with work, the
    estimate is partial). ``max_devices``: devices its work can spread over;
    ``configured``: what the config runs it on, in words."""

    name: str
    kind: str
    work: tuple[Work, ...] = ()
    notes: tuple[str, ...] = ()
    missing: str = ""
    max_devices: int = 1
    configured: str = ""

    @property
    def flops(self) -> float:
        return sum(w.flops for w in self.work)

    @property
    def nbytes(self) -> float:
        return sum(w.nbytes for w in self.work)


def cpu(name: str, why: str) -> StageCost:
    return StageCost(name, CPU, notes=(why,))


def not_estimated(name: str, why: str, kind: str = NONE) -> StageCost:
    return StageCost(name, kind, missing=why)


@dataclass(frozen=True)
class Fit:
    """One model's training: its name and the FLOPs of one optimiser step."""

    name: str
    flops_per_step: float
    steps: int


def training(name: str, job: TrainJob, job_key: str, fits: Sequence[Fit], notes: Sequence[str] = (),
             concurrent: int = 1) -> StageCost:
    """A training stage of ``fits`` run with ``job`` (``concurrent`` of them at once)."""
    per_step = job.examples_per_step()
    bound = (f"; at most: early stopping (patience {job.early_stopping_patience}) may end a fit sooner"
             if job.early_stopping_patience else "")
    work = tuple(Work(f"{f.name}: {f.steps} steps x {per_step} examples", f.flops_per_step * f.steps)
                 for f in fits)
    devices = "GPU" if job.use_gpu else "CPU worker"
    configured = f"{job.num_workers} {devices}(s) ({job_key}.num_workers)"
    return StageCost(name, TRAIN, work, (*notes, f"dev evaluations and checkpoints not counted{bound}"),
                     max_devices=per_step * max(concurrent, 1), configured=configured)


@dataclass(frozen=True)
class Timed:
    """A stage's cost in time on a device: hours on one, and on ``devices`` of ``gpus``."""

    cost: StageCost
    device_hours: float
    devices: int
    wall_hours: float
    limit: str = ""  # why it uses fewer devices than were given


@dataclass(frozen=True)
class Rates:
    """What turns FLOPs and bytes into seconds on one device."""

    peaks: Peaks
    train: Share
    decode: Share
    scaling: float

    def seconds(self, cost: StageCost) -> float:
        compute = self.peaks.seconds_for_flops(cost.flops) or 0.0
        memory = self.peaks.seconds_for_bytes(cost.nbytes) or 0.0
        return compute / self.train.value + memory / self.decode.value


def timed(cost: StageCost, rates: Rates, gpus: int) -> Timed:
    """``cost`` on one device and on up to ``gpus`` devices (`StageCost.max_devices`)."""
    hours = rates.seconds(cost) / 3600
    if cost.kind != TRAIN or gpus <= 1 or not cost.work:
        limit = "" if gpus <= 1 or not cost.work else "runs on one device (one stage task)"
        return Timed(cost, hours, 1, hours, limit)
    used = min(gpus, cost.max_devices)
    limit = f"at most {cost.max_devices} (examples per step x fits at once)" if used < gpus else ""
    return Timed(cost, hours, used, hours / (used * (rates.scaling if used > 1 else 1.0)), limit)
