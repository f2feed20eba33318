"""The driver's progress line: ``[k/N elapsed eta]`` before each stage start / finish.

Pure functions of what the executor knows (tested without Ray), and `StageProgress`, the
executor's running account of started and finished stages that feeds them. The estimate of the time
left starts from the scheduler's per-stage estimates (a stage's last measured time, else
`Stage.expected`, from the stage table; `stages.framework.executor`) and is scaled by how the stages
finished so far compared with their estimates: a machine twice as slow as the last run
doubles the ETA after its first stage. Until one stage has run there is nothing to scale
by, and the line says ``eta ?``.

The time left is the larger of two lower bounds, each scaled:

- the longest remaining path of the DAG (stages after one another cannot overlap);
- the remaining work spread over the cluster's parallel lanes (stages beside one another
  share the CPUs).
"""

from __future__ import annotations

import time
from collections.abc import Mapping

from stages.common.progress import fmt_duration
from stages.framework.dag import PlannedStage


def speed_factor(estimates: Mapping[str, float], measured: Mapping[str, float]) -> float | None:
    """Real / estimated time over the stages that ran (None before the first one)."""
    spent = sum(measured.values())
    expected = sum(estimates.get(name, 0.0) for name in measured)
    if not measured or expected <= 0:
        return None
    return spent / expected


def eta_seconds(
    estimates: Mapping[str, float],
    measured: Mapping[str, float],
    running_for: Mapping[str, float],
    pending: list[str],
    longest_path: Mapping[str, float],
    lanes: float,
) -> float | None:
    """Seconds left, or None until a stage has run.

    ``estimates``: the scheduler's seconds per stage; ``measured``: real seconds of the stages
    that ran; ``running_for``: seconds each running stage has run so far; ``pending``: the
    stages not started; ``longest_path``: per stage, its estimate plus the longest chain of
    estimates after it (`stages.framework.dag.critical_path`); ``lanes``: how many stages
    can run side by side (the cluster's CPUs).
    """
    factor = speed_factor(estimates, measured)
    if factor is None:
        return None
    # a running stage's remaining part: its scaled estimate minus what it has run
    left = {n: max(0.0, estimates.get(n, 0.0) * factor - ran) for n, ran in running_for.items()}
    left.update({n: estimates.get(n, 0.0) * factor for n in pending})
    if not left:
        return 0.0
    chain = max([left[n] for n in running_for]
                + [longest_path.get(n, estimates.get(n, 0.0)) * factor for n in pending])
    spread = sum(left.values()) / max(lanes, 1.0)
    return max(chain, spread)


def progress_prefix(finished: int, planned: int, elapsed: float, eta: float | None) -> str:
    """``[3/27 1m05s eta 12m30s]``: stages finished (cache hits included) of those planned,
    wall time since the pipeline started and the estimated time left."""
    width = len(str(planned))
    left = "?" if eta is None else fmt_duration(eta)
    return f"[{finished:>{width}}/{planned} {fmt_duration(elapsed)} eta {left}]"


class StageProgress:
    """What the executor knows of the run so far, and the prefix of its stage lines."""

    def __init__(self, plan: list[PlannedStage], estimate: dict[str, float], longest_path: dict[str, float],
                 lanes: float) -> None:
        self.start = time.time()
        self.planned = len(plan)
        self.estimate, self.longest_path, self.lanes = estimate, longest_path, lanes
        self.pending = [p.name for p in plan if p.will_run]
        self.finished = 0
        self.measured: dict[str, float] = {}
        self.started: dict[str, float] = {}

    def began(self, name: str) -> None:
        self.pending.remove(name)
        self.started[name] = time.time()

    def ended(self, name: str, seconds: float | None) -> None:
        """``seconds``: its real duration (None for a hit, a failure or a skip)."""
        self.finished += 1
        if name in self.pending:
            self.pending.remove(name)
        self.started.pop(name, None)
        if seconds is not None:
            self.measured[name] = seconds

    def prefix(self) -> str:
        now = time.time()
        eta = eta_seconds(self.estimate, self.measured, {n: now - t for n, t in self.started.items()},
                          self.pending, self.longest_path, self.lanes)
        return progress_prefix(self.finished, self.planned, now - self.start, eta)
