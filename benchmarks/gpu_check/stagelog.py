"""Stages of a pipeline run from its log lines, timed by when each line arrived.

The executor logs ``[3/27 1m05s eta 12m30s] <stage> start ...`` when it hands a stage to
Ray and ``<stage> done in ...``, ``FAILED``, ``cached`` or ``skipped: upstream failure``
when it ends (`stages.framework.executor`). The clock here is the reader's, the same as
the GPU memory sampler's, so a stage's window selects its samples.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass

from benchmarks.gpu_check.gpumem import GIB, window_peak

LINE = re.compile(r"\] (\S+)\s+(start|done|FAILED|cached|reused|skipped)\b")
END = {"done": "done", "FAILED": "failed", "reused": "done", "cached": "cached", "skipped": "skipped"}


@dataclass
class StageWindow:
    stage: str
    status: str = "running"
    start: float | None = None
    end: float | None = None


class StageLog:
    def __init__(self) -> None:
        self.stages: dict[str, StageWindow] = {}

    def feed(self, line: str, now: float | None = None) -> bool:
        """Take one log line; True when it started or ended a stage."""
        match = LINE.search(line)
        if not match:
            return False
        now = time.time() if now is None else now
        name, event = match.groups()
        window = self.stages.setdefault(name, StageWindow(name))
        if event == "start":
            window.start, window.status = now, "running"
        else:
            window.status = END[event]
            window.end = now if window.start is not None else None
        return True

    def table(self, samples: list[tuple[float, int]], now: float | None = None) -> list[dict]:
        """One row per stage seen: status, seconds, peak GPU GiB in its window, stages beside it."""
        now = time.time() if now is None else now
        rows = []
        for w in self.stages.values():
            end = w.end if w.end is not None else now
            peak = window_peak(samples, w.start, end) if w.start is not None else None
            beside = [o.stage for o in self.stages.values() if o is not w and o.start is not None
                      and w.start is not None and o.start < end and (o.end or now) > w.start]
            rows.append({"stage": w.stage, "status": w.status,
                         "seconds": None if w.start is None else round(end - w.start, 1),
                         "peak_gib": None if peak is None else round(peak / GIB, 2), "overlapped": beside})
        return rows
