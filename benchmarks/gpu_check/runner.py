"""Run one call's parts: each a subprocess with a limit derived from the call's budget.

A part that fails, times out or lacks what it needs never stops the parts after it. Each
part's stdout and stderr go to ``<work>/<part>.log``; ``<work>/status.json`` is rewritten
after every part (so a call killed from outside still leaves the statuses so far), one
record per part: status (ok, failed, timed_out, skipped), rc, seconds, timed_out, the
command, and why a skipped part did not run.
"""

from __future__ import annotations

import json
import shlex
import time
from datetime import UTC, datetime
from pathlib import Path

from benchmarks.gpu_check.environment import RunEnvironment
from benchmarks.gpu_check.parts import GRACE_S, Call, Part
from benchmarks.gpu_check.process import Outcome, PartProcess

MIN_PART_S = 5  # less than this left of the budget: the part is skipped, not started to be killed


def max_seconds(timeout: float) -> int:
    """What a part may spend before it stops starting new work: its limit less a grace for
    writing results (at most a third of a short limit)."""
    return max(1, int(timeout - min(GRACE_S, timeout / 3)))


class CallRunner:
    def __init__(self, call: Call, environment: RunEnvironment, work: Path, budget_s: float | None = None,
                 parts: tuple[Part, ...] | None = None, echo=print) -> None:
        self.call, self.environment, self.work = call, environment, work
        self.parts = parts if parts is not None else call.parts
        self.budget_s = call.budget_s if budget_s is None else budget_s
        self.echo = echo
        self.records: list[dict] = []
        self.started_utc = datetime.now(UTC).isoformat(timespec="seconds")

    def run(self) -> list[dict]:
        self.work.mkdir(parents=True, exist_ok=True)
        start = time.monotonic()
        deadline = start + self.budget_s
        background: dict[str, tuple[PartProcess, dict]] = {}
        for part in self.parts:
            for name in part.after:  # a background part this one depends on
                if name in background:
                    self._end(*background.pop(name), not_after=deadline)
            record = self._record(part)
            left = deadline - time.monotonic()
            if left < MIN_PART_S:
                self._skip(record, f"no time left in the call's budget of {self.budget_s:.0f} s")
                continue
            timeout = min(part.seconds, left)
            record["timeout_s"] = round(timeout)
            part_dir = self.work / part.name
            part_dir.mkdir(parents=True, exist_ok=True)
            argv = part.command(self.environment.values(part_dir, max_seconds(timeout)))
            record["command"] = shlex.join(argv)
            env = self.environment.env(part.env)
            missing = self.environment.missing_modules(part.needs, env)
            absent = [p.format(**self.environment.values(part_dir, 0)) for p in part.needs_paths]
            absent = [p for p in absent if not Path(p).exists()]
            if missing or absent:
                self._skip(record, self.environment.missing_reason(missing, absent))
                continue
            self.echo(f"gpu-check call {self.call.number}: {part.name} started (limit {timeout:.0f} s"
                      f"{', in the background' if part.background else ''})")
            record["status"] = "running"
            self._write()
            proc = PartProcess(argv, self.work / f"{part.name}.log", env, self.environment.repo, timeout, part.nice)
            if part.background:
                background[part.name] = (proc, record)
            else:
                self._end(proc, record)
        for proc, record in background.values():  # each bounded by its own limit
            self._end(proc, record)
        self._write(finished=True)
        return self.records

    def _record(self, part: Part) -> dict:
        record = {"part": part.name, "what": part.what, "status": "pending", "rc": None, "seconds": 0.0,
                  "timed_out": False, "timeout_s": part.seconds, "command": "", "reason": "",
                  "log": f"{part.name}.log", "background": part.background}
        self.records.append(record)
        return record

    def _skip(self, record: dict, reason: str) -> None:
        record.update(status="skipped", reason=reason)
        self.echo(f"gpu-check call {self.call.number}: {record['part']} skipped: {reason}")
        self._write()

    def _end(self, proc: PartProcess, record: dict, not_after: float | None = None) -> None:
        out: Outcome = proc.finish(not_after)
        status = "timed_out" if out.timed_out else ("ok" if out.rc == 0 else "failed")
        record.update(status=status, rc=out.rc, seconds=round(out.seconds, 1), timed_out=out.timed_out)
        if out.timed_out:
            record["reason"] = f"stopped at its limit of {record['timeout_s']} s (process group killed)"
        self.echo(f"gpu-check call {self.call.number}: {record['part']} {status} in {out.seconds:.0f} s"
                  f" (rc {out.rc})")
        self._write()

    def _write(self, finished: bool = False) -> None:
        status = {"call": self.call.number, "title": self.call.title, "mode": self.environment.mode,
                  "started_utc": self.started_utc, "budget_s": self.budget_s, "finished": finished,
                  "parts": self.records}
        tmp = self.work / "status.json.tmp"
        tmp.write_text(json.dumps(status, indent=2) + "\n")
        tmp.replace(self.work / "status.json")
