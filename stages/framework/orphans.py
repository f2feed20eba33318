"""MLflow runs whose driver died: found on the next start and marked FAILED.

A driver killed by SIGKILL (or a lost node) cannot end its runs, and MLflow would show them
RUNNING forever. Every run a driver creates carries ``nugget.driver`` (``host:pid:start``,
the start time telling a reused pid apart), and the parent run a ``nugget.heartbeat`` the
driver refreshes every minute. When a driver starts, a RUNNING run of the experiment is
an orphan if its driver ran on this host and that process is gone, or ran elsewhere and
its heartbeat is older than `STALE_SECONDS`; runs nested under an orphan (a Tune trial's,
a stage's) are orphans too. They are ended FAILED and tagged ``nugget.orphaned`` with why.
"""

from __future__ import annotations

import socket
import threading
import time
from typing import Any

import psutil
from mlflow.tracking import MlflowClient

DRIVER_TAG = "nugget.driver"
HEARTBEAT_TAG = "nugget.heartbeat"
ORPHANED_TAG = "nugget.orphaned"
HEARTBEAT_SECONDS = 60.0
STALE_SECONDS = 600.0  # ten missed heartbeats: the driver on another host is gone


def _started(pid: int) -> int:
    return int(psutil.Process(pid).create_time())


def driver_identity() -> str:
    """``host:pid:start`` of this process."""
    pid = psutil.Process().pid
    return f"{socket.gethostname()}:{pid}:{_started(pid)}"


def _why_dead(identity: str, heartbeat: str | None, now: float) -> str | None:
    """Why the driver ``identity`` is gone (None while it may still run)."""
    host, pid, started = identity.rsplit(":", 2)
    if host == socket.gethostname():
        try:
            alive = _started(int(pid)) == int(started)
        except (psutil.Error, ValueError):
            alive = False
        return None if alive else f"driver process {pid} on {host} is gone"
    if heartbeat is None:
        return None  # a driver of another host that has not sent a heartbeat yet
    age = now - float(heartbeat)
    return f"driver on {host} sent no heartbeat for {age:.0f} s" if age > STALE_SECONDS else None


def mark_orphaned_runs(client: MlflowClient, experiment_id: str) -> dict[str, str]:
    """End every orphaned RUNNING run of the experiment FAILED; returns {run id: why}."""
    running = client.search_runs([experiment_id], filter_string="attributes.status = 'RUNNING'",
                                 max_results=5000)
    heartbeats = {r.info.run_id: r.data.tags.get(HEARTBEAT_TAG) for r in running}
    now = time.time()
    orphans: dict[str, str] = {}
    for run in running:
        tags = run.data.tags
        if DRIVER_TAG in tags:
            parent = tags.get("mlflow.parentRunId")
            why = _why_dead(tags[DRIVER_TAG], heartbeats.get(run.info.run_id) or heartbeats.get(parent or ""), now)
            if why:
                orphans[run.info.run_id] = why
    grew = True
    while grew:  # runs nested under an orphan (created by workers, without a driver tag)
        grew = False
        for run in running:
            parent = run.data.tags.get("mlflow.parentRunId")
            if run.info.run_id not in orphans and parent in orphans:
                orphans[run.info.run_id] = f"its parent run {parent} was orphaned"
                grew = True
    for run_id, why in orphans.items():
        client.set_tag(run_id, ORPHANED_TAG, why)
        client.set_terminated(run_id, status="FAILED")
    return orphans


class Heartbeat:
    """Refreshes ``nugget.heartbeat`` on the parent run every `HEARTBEAT_SECONDS` (a daemon
    thread) until stopped."""

    def __init__(self, logger: Any, every: float = HEARTBEAT_SECONDS) -> None:
        self.logger, self.every = logger, every
        self._stop = threading.Event()
        self._beat()
        self._thread = threading.Thread(target=self._loop, name="nugget-heartbeat", daemon=True)
        self._thread.start()

    def _beat(self) -> None:
        self.logger.set_tags({HEARTBEAT_TAG: f"{time.time():.0f}"})

    def _loop(self) -> None:
        while not self._stop.wait(self.every):
            try:
                self._beat()
            except Exception:  # a tracking hiccup must not kill the run; the next beat retries
                continue

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
