"""One part's subprocess: its own process group, its log, and its time limit.

A part runs in a new session so that, at its limit, the whole group (a benchmark's helper
processes, a pipeline's Ray) is stopped with it: SIGTERM first so it can write what it
has, SIGKILL after `KILL_AFTER_S`. What the group leaves running after a normal exit is
killed too: the next part must find the GPU as the previous one found it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path

KILL_AFTER_S = 10.0


@dataclass
class Outcome:
    rc: int | None
    seconds: float
    timed_out: bool


class PartProcess:
    """A started part; `finish` waits for it until its deadline, then stops its group."""

    def __init__(self, argv: list[str], log: Path, env: dict[str, str], cwd: Path, timeout_s: float,
                 nice: int = 0) -> None:
        self.start = time.monotonic()
        self.deadline = self.start + timeout_s
        self.ended: float | None = None  # when it exited: a background part is reaped later
        log.parent.mkdir(parents=True, exist_ok=True)
        self._log = log.open("wb")
        try:
            self.proc = subprocess.Popen(
                argv, stdout=self._log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=cwd, env=env,
                start_new_session=True, preexec_fn=(lambda: os.nice(nice)) if nice else None)
        except OSError as exc:  # no such program: the part fails, the call goes on
            self._log.write(f"gpu-check: could not start {argv[0]!r}: {exc}\n".encode())
            self._log.close()
            self.proc = None
        threading.Thread(target=self._watch, daemon=True).start()

    def _watch(self) -> None:
        if self.proc is not None:
            self.proc.wait()
            self.ended = time.monotonic()

    def done(self) -> bool:
        return self.proc is None or self.proc.poll() is not None

    def finish(self, not_after: float | None = None) -> Outcome:
        """Wait until the part exits or its deadline (or ``not_after``, if earlier) passes."""
        if self.proc is None:
            return Outcome(None, 0.0, False)
        limit = min(self.deadline, not_after) if not_after is not None else self.deadline
        timed_out = False
        try:
            self.proc.wait(timeout=max(0.0, limit - time.monotonic()))
        except subprocess.TimeoutExpired:
            timed_out = True
            self._signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=KILL_AFTER_S)
            except subprocess.TimeoutExpired:
                self._signal(signal.SIGKILL)
                self.proc.wait()
        seconds = (self.ended or time.monotonic()) - self.start
        self._signal(signal.SIGKILL)  # whatever the group left running
        self._log.close()
        return Outcome(self.proc.returncode, seconds, timed_out)

    def _signal(self, sig: signal.Signals) -> None:
        try:
            os.killpg(self.proc.pid, sig)  # the group id is the leader's pid (new session)
        except (ProcessLookupError, PermissionError):
            pass
