"""What a stage holds while it runs (its *demand*) and the ledger the executor schedules by.

A demand maps Ray resource names (``CPU``, ``GPU``, custom ones) to amounts: the stage's
own task (``Stage.resources``) plus everything its ``run`` starts and waits for: Ray Train
worker groups, Tune trials, Ray Data / Ray task fan-outs. :data:`ALL` stands for "all of
this resource that is free when the stage starts, at least one" (a fan-out of short tasks
that spreads over whatever is free: it may start with one CPU, and no other stage is
started on the CPUs it took). :data:`WHOLE` stands for "all of this resource the cluster has":
the stage waits until no running stage holds any of it (a measurement that must run alone).

The executor starts a ready stage only when its whole demand is free in the
:class:`Ledger` (the cluster's resources minus the demands of the running stages), so a
worker group never waits for CPUs that another stage's workers hold. A demand larger than
the whole cluster fails before anything starts, naming the config field that sizes it
(:func:`check_fits`; ``stages.training.launch.check_resources`` uses the same test).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

ALL = math.inf
# "all of this resource the cluster has": the stage starts only when no other stage holds any of it
# (a measurement that must run alone on the machine: eval_efficiency's timings)
WHOLE = -1.0
EPS = 1e-9
# the resources the ledger accounts; memory / object store are left to Ray
CAPACITY_ENV = "NUGGET_CLUSTER_RESOURCES"  # JSON, e.g. {"CPU": 64, "GPU": 8}: an autoscaling cluster's reach


class DemandError(ValueError):
    """A stage needs more than the whole cluster has."""


class Demand(dict):
    """``{resource: amount}`` plus ``lower``: the config field(s) to lower when it does not fit."""

    def __init__(self, resources: Mapping[str, float] | None = None, lower: str = "") -> None:
        super().__init__({k: float(v) for k, v in (resources or {}).items() if v})
        self.lower = lower


def task_demand(options: Mapping[str, Any]) -> dict[str, float]:
    """Ray task options (``num_cpus``, ``num_gpus``, ``resources``) as resource amounts.
    A task with no ``num_cpus`` takes Ray's default of one CPU."""
    out: dict[str, float] = {"CPU": float(options.get("num_cpus", 1) or 0)}
    if options.get("num_gpus"):
        out["GPU"] = float(options["num_gpus"])
    for k, v in (options.get("resources") or {}).items():
        out[k] = out.get(k, 0.0) + float(v)
    return {k: v for k, v in out.items() if v}


def worker_demand(num_workers: int, use_gpu: bool) -> dict[str, float]:
    """A Ray Train worker group with default ScalingConfig resources: 1 CPU, or 1 GPU (no CPU)
    with ``use_gpu``, per worker."""
    return {"GPU" if use_gpu else "CPU": float(num_workers)}


def add(*demands: Mapping[str, float]) -> dict[str, float]:
    out: dict[str, float] = {}
    for d in demands:
        for k, v in d.items():
            out[k] = out.get(k, 0.0) + float(v)
    return out


def section_value(sections: Mapping[str, Any], dotted: str) -> Any:
    """``dotted`` (e.g. ``"train.nugget.num_workers"``) read from a stage's declared sections:
    the longest declared prefix, then attributes."""
    for cut in range(len(dotted.split(".")), 0, -1):
        head = ".".join(dotted.split(".")[:cut])
        if head in sections:
            node = sections[head]
            for part in dotted.split(".")[cut:]:
                node = getattr(node, part)
            return node
    raise KeyError(f"{dotted!r} is not inside the declared config sections {sorted(sections)}")


def cluster_capacity() -> dict[str, float]:
    """``ray.cluster_resources()``, or the JSON of ``$NUGGET_CLUSTER_RESOURCES`` where set
    (an autoscaling cluster starts smaller than it can grow)."""
    raw = os.environ.get(CAPACITY_ENV)
    if raw:
        return {k: float(v) for k, v in json.loads(raw).items()}
    import ray

    return {k: float(v) for k, v in ray.cluster_resources().items()}


def fmt_amounts(amounts: Mapping[str, float]) -> str:
    return ", ".join(f"{k}={v:g}" for k, v in sorted(amounts.items())) or "nothing"


def shortfall(demand: Mapping[str, float], capacity: Mapping[str, float]) -> dict[str, float]:
    """The resources of ``demand`` (``ALL`` taken as 0) that ``capacity`` cannot hold at all."""
    return {k: v for k, v in demand.items() if v not in (ALL, WHOLE) and v > capacity.get(k, 0.0) + EPS}


def check_fits(stage: str, demand: Demand, capacity: Mapping[str, float]) -> None:
    """Raise :class:`DemandError` naming the stage and ``demand.lower`` if the whole
    cluster cannot host ``demand``."""
    short = shortfall(demand, capacity)
    if short:
        have = {k: capacity.get(k, 0.0) for k in short}
        raise DemandError(
            f"stage {stage!r} needs {fmt_amounts(short)} at once but the Ray cluster has {fmt_amounts(have)}; "
            f"lower {demand.lower or 'its resources'}"
        )


@dataclass
class Reservation:
    """What the first ready stage that does not fit is promised: the time the running
    stages are expected to have freed its demand (``at``) and what is left over then."""

    stage: str
    at: float
    spare: dict[str, float]


class Ledger:
    """The cluster's resources minus the demands of the running stages (with the time
    each is expected to end: for :meth:`reserve`)."""

    def __init__(self, capacity: Mapping[str, float]) -> None:
        self.capacity = dict(capacity)
        self.held: dict[str, dict[str, float]] = {}
        self.ends: dict[str, float] = {}

    def resolve(self, demand: Mapping[str, float]) -> dict[str, float]:
        """``demand`` as it would be held now: :data:`ALL` is what is free of it, at least
        one (or the whole amount of a cluster with less)."""
        free = self.free()
        return {k: self._amount(k, v, max(free.get(k, 0.0), min(1.0, self.capacity.get(k, 0.0))))
                for k, v in demand.items()}

    def _amount(self, resource: str, value: float, all_as: float) -> float:
        """``value`` of ``resource`` as an amount: :data:`ALL` as ``all_as``, :data:`WHOLE` as the
        cluster's capacity, any other value as it is."""
        if value == ALL:
            return all_as
        return self.capacity.get(resource, 0.0) if value == WHOLE else value

    def free(self) -> dict[str, float]:
        used = add(*self.held.values())
        return {k: v - used.get(k, 0.0) for k, v in self.capacity.items()}

    def fits(self, demand: Mapping[str, float]) -> bool:
        free = self.free()
        return all(v <= free.get(k, 0.0) + EPS for k, v in self.resolve(demand).items())

    def take(self, name: str, demand: Mapping[str, float], expected_end: float = math.inf) -> None:
        self.held[name] = self.resolve(demand)
        self.ends[name] = expected_end

    def release(self, name: str) -> None:
        self.held.pop(name, None)
        self.ends.pop(name, None)

    def reserve(self, name: str, demand: Mapping[str, float], now: float) -> Reservation:
        """EASY backfilling: reserve for ``demand`` (a stage that does not fit now) the
        resources of the running stages that are expected to end first."""
        need = {k: self._amount(k, v, min(1.0, self.capacity.get(k, 0.0))) for k, v in demand.items()}
        free = self.free()
        for end, held in sorted((self.ends[n], n) for n in self.held):
            free = add(free, self.held[held])
            if all(v <= free.get(k, 0.0) + EPS for k, v in need.items()):
                return Reservation(name, max(end, now), {k: v - need.get(k, 0.0) for k, v in free.items()})
        return Reservation(name, math.inf, {})

    def may_backfill(self, demand: Mapping[str, float], seconds: float, now: float, res: Reservation) -> bool:
        """Whether a stage that fits now may start before the reserved one: it is expected
        to end before the reservation's time, or it fits in what the reservation leaves
        over (which it then uses up)."""
        if now + seconds <= res.at:
            return True
        need = self.resolve(demand)
        if all(v <= res.spare.get(k, 0.0) + EPS for k, v in need.items()):
            res.spare = {k: v - need.get(k, 0.0) for k, v in res.spare.items()}
            return True
        return False
