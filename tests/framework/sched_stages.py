"""Stages used only by the scheduling tests: each sleeps and records when it ran; their
demands are declared, their Ray tasks hold no CPU (only the executor's ledger keeps
them apart)."""

from __future__ import annotations

import time
from typing import Any, ClassVar

from stages.framework.dag import Dag
from stages.framework.resources import Demand
from stages.framework.stage import Stage, StageContext


class _Timed(Stage):
    config_keys = ("report.title",)
    resources = {"num_cpus": 0}
    cpus: ClassVar[float] = 1
    sleep: ClassVar[float] = 1.0

    @classmethod
    def demand(cls, sections: dict[str, Any]) -> Demand:
        return Demand({"CPU": cls.cpus}, lower=f"{cls.name}.cpus")

    def run(self, ctx: StageContext) -> None:
        start = time.time()
        time.sleep(self.sleep)
        ctx.write_json("times.json", {"start": start, "end": time.time()})


class Hog1(_Timed):
    name, cpus = "hog1", 2


class Hog2(_Timed):
    name, cpus = "hog2", 2


class Long(_Timed):
    name, cpus, sleep, expected_seconds = "long", 1, 3.0, 100


class Wide(_Timed):
    name, cpus, sleep, expected_seconds = "wide", 2, 0.5, 50


class Short(_Timed):
    name, cpus, sleep, expected_seconds = "short", 1, 0.5, 1


class TooBig(_Timed):
    name, cpus, sleep = "too_big", 3, 0.1


class Gate(_Timed):  # unblocks a wide stage with a long path and a narrow one with a short path
    name, cpus, sleep, expected_seconds = "gate", 1, 0.2, 0.2


class Ahead(_Timed):  # runs beside gate, ends soon after it
    name, cpus, sleep, expected_seconds = "ahead", 1, 2.0, 2.0


class WideAfter(_Timed):
    name, cpus, sleep, expected_seconds, upstream = "wide_after", 2, 0.5, 100, ("gate",)


class Late(_Timed):  # fits beside `ahead`, but would hold a CPU the wide stage is waiting for
    name, cpus, sleep, expected_seconds, upstream = "late", 1, 0.5, 50, ("gate",)


HOGS_DAG = Dag([Hog1, Hog2])
RESERVE_DAG = Dag([Gate, Ahead, WideAfter, Late])
MIXED_DAG = Dag([Long, Wide, Short])
TOO_BIG_DAG = Dag([Hog1, TooBig])


def times(root, name: str) -> tuple[float, float]:
    import json

    (path,) = (root / name).glob("*/times.json")
    t = json.loads(path.read_text())
    return t["start"], t["end"]
