"""Stops the private Ray of a driver that was killed.

A driver that starts its own Ray (``ray.init(address="local")``) owns GCS, raylet, the
dashboard and runtime-env agents and the workers. Killed by SIGKILL, it cannot stop them:
GCS and raylet notice and exit, but the agents (``ray::DashboardAgent``,
``ray::RuntimeEnvAgent``) keep running, reparented to init (docs/reliability.md). The reaper is a
small process in its own session that remembers every descendant of the driver (pid and
start time, polled each second) and, once the driver is gone, sends SIGTERM to those
still alive, then SIGKILL. It never touches a process the driver did not start, nor one
whose pid was reused (start time differs).

    python -m stages.framework.reaper DRIVER_PID
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

import psutil

POLL_SECONDS = 1.0
GRACE_SECONDS = 3.0  # after the driver is gone: let Ray's own shutdown finish first


def start_reaper(driver_pid: int) -> subprocess.Popen[bytes]:
    """Start the reaper of ``driver_pid`` (detached: it outlives the driver's process group)."""
    return subprocess.Popen(
        [sys.executable, "-m", "stages.framework.reaper", str(driver_pid)],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True, close_fds=True,
    )


def _descendants(driver: psutil.Process) -> dict[int, float]:
    found: dict[int, float] = {}
    for child in driver.children(recursive=True):
        if child.pid == os.getpid():  # the reaper is the driver's child too
            continue
        try:
            found[child.pid] = child.create_time()
        except psutil.Error:
            continue
    return found


def _alive(pid: int, started: float) -> psutil.Process | None:
    try:
        proc = psutil.Process(pid)
        return proc if proc.create_time() == started and proc.status() != psutil.STATUS_ZOMBIE else None
    except psutil.Error:
        return None


def watch(driver_pid: int) -> list[int]:
    """Block until ``driver_pid`` exits, then stop its leftover descendants; their pids."""
    try:
        driver = psutil.Process(driver_pid)
    except psutil.Error:
        return []
    known: dict[int, float] = {}
    while True:
        try:
            if driver.status() == psutil.STATUS_ZOMBIE:
                break
            known.update(_descendants(driver))
        except psutil.Error:  # gone (the driver may vanish between any two calls)
            break
        known = {pid: t for pid, t in known.items() if _alive(pid, t)}
        time.sleep(POLL_SECONDS)
    time.sleep(GRACE_SECONDS)
    left = [p for pid, t in known.items() if (p := _alive(pid, t)) is not None]
    for proc in left:
        try:
            proc.terminate()
        except psutil.Error:
            continue
    _, still = psutil.wait_procs(left, timeout=5)
    for proc in still:
        try:
            proc.kill()
        except psutil.Error:
            continue
    return [p.pid for p in left]


if __name__ == "__main__":
    watch(int(sys.argv[1]))
