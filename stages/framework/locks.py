"""Locks of one cached output, shared by every process and invocation on one artifact root.

Two locks per ``(stage, key)``:

- the **compute lock** (exclusive): held by the task that computes and publishes the
  output. A second invocation planning the same miss waits for it, then finds the output
  complete and reads the winner's instead of computing it twice. Whoever holds it also
  knows that every scratch directory of that key is a crash leftover.
- the **read lock** (shared by readers, exclusive for a forced replace): a stage holds it
  on each of its inputs while it runs, so ``--force`` never swaps an output from under a
  reader; the replace waits for the readers to finish.

Local roots (and shared POSIX filesystems) use ``flock`` on files under
``<root>/.locks/<stage>/``: the kernel releases a lock when its process dies, even by SIGKILL, so
a crash never leaves a lock held. Object stores (S3, GCS) have no such primitive: there
the compute lock is a lease object (``<key>.lease.json``: owner, expiry) renewed by a
thread while held and taken over once expired. A lease is best effort (two owners can
both win a race inside one round trip); the publish itself stays safe, as the marker is
written last and a second publish of the same key keeps the first. Object-store readers
work on a verified local copy (`stages.framework.store`), so they need no read lock.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

LEASE_SECONDS = 120.0  # a remote lease not renewed for this long belongs to a dead owner
POLL_SECONDS = 0.5
WAIT_NOTICE_SECONDS = 30.0  # a waiter says so at once, then every this many seconds
# every wait is bounded: each caller passes its lock's bound through `wait_bound`, which this
# variable overrides (a researcher whose stage legitimately holds a lock longer raises it)
WAIT_ENV = "NUGGET_LOCK_WAIT_S"

Waiting = Callable[[str], None]  # told who holds the lock while a caller waits


def wait_bound(default: float) -> float:
    """Seconds a lock wait may last: ``$NUGGET_LOCK_WAIT_S`` when set, else ``default``."""
    raw = os.environ.get(WAIT_ENV, "")
    try:
        return float(raw) if raw else default
    except ValueError:
        raise ValueError(f"${WAIT_ENV}={raw!r}: must be a number of seconds") from None


def wait_env_vars() -> dict[str, str]:
    """``$NUGGET_LOCK_WAIT_S`` when set, for the runtime env of the tasks that take locks."""
    return {WAIT_ENV: os.environ[WAIT_ENV]} if os.environ.get(WAIT_ENV) else {}


def owner_label() -> str:
    """``host:pid``: who holds a lock (shown to waiters)."""
    return f"{socket.gethostname()}:{os.getpid()}"


class FileLock:
    """An ``flock`` on one local file: exclusive or shared, blocking or not."""

    def __init__(self, path: str, shared: bool = False) -> None:
        self.path, self.shared = path, shared
        self._fd: int | None = None

    def try_acquire(self) -> bool:
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        mode = fcntl.LOCK_SH if self.shared else fcntl.LOCK_EX
        try:
            fcntl.flock(fd, mode | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return False
        self._fd = fd
        if not self.shared:  # who holds it, for the messages of waiters
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{owner_label()} since {time.strftime('%H:%M:%S')}\n".encode(), 0)
        return True

    def holder(self) -> str:
        try:
            with open(self.path) as fh:
                return fh.read().strip() or "another process"
        except OSError:
            return "another process"

    def acquire(self, on_wait: Waiting | None, timeout: float) -> None:
        """Wait for the lock, telling ``on_wait`` who holds it; `LockTimeout` after
        ``timeout`` s (no default: every caller chooses its lock's bound, `wait_bound`)."""
        _wait_for(self.try_acquire, self.holder, on_wait, timeout, self.path)

    def release(self) -> None:
        if self._fd is not None:
            if not self.shared:  # no stale name for the next waiter (readers write none)
                os.ftruncate(self._fd, 0)
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None


class LeaseLock:
    """A lease object on an fsspec filesystem (object stores): see the module docstring."""

    def __init__(self, fs: Any, path: str, lease_seconds: float = LEASE_SECONDS) -> None:
        self.fs, self.path, self.lease_seconds = fs, path, lease_seconds
        self.token = f"{owner_label()}:{uuid.uuid4().hex[:8]}"
        self._stop: threading.Event | None = None

    def _read(self) -> dict[str, Any] | None:
        try:
            return json.loads(self.fs.cat_file(self.path))
        except FileNotFoundError:
            return None
        except (OSError, ValueError):
            return {}  # unreadable: treated as expired

    def _write(self) -> None:
        body = {"owner": self.token, "expires": time.time() + self.lease_seconds}
        self.fs.pipe_file(self.path, json.dumps(body).encode())

    def try_acquire(self) -> bool:
        lease = self._read()
        if lease and lease.get("owner") != self.token and lease.get("expires", 0) > time.time():
            return False
        self._write()
        time.sleep(POLL_SECONDS)  # a rival writing in the same instant: the last write wins
        lease = self._read()
        if not lease or lease.get("owner") != self.token:
            return False
        self._stop = threading.Event()
        threading.Thread(target=self._renew, args=(self._stop,), daemon=True).start()
        return True

    def _renew(self, stop: threading.Event) -> None:
        while not stop.wait(self.lease_seconds / 3):
            self._write()

    def holder(self) -> str:
        lease = self._read() or {}
        return str(lease.get("owner", "another process")).rsplit(":", 1)[0]

    def acquire(self, on_wait: Waiting | None, timeout: float) -> None:
        _wait_for(self.try_acquire, self.holder, on_wait, timeout, self.path)

    def release(self) -> None:
        if self._stop is None:
            return
        self._stop.set()
        self._stop = None
        lease = self._read()
        if lease and lease.get("owner") == self.token:
            self.fs.rm_file(self.path)


class LockTimeout(TimeoutError):
    """A lock stayed held by another process for longer than the caller would wait."""


def _wait_for(try_acquire: Callable[[], bool], holder: Callable[[], str], on_wait: Waiting | None,
              timeout: float, path: str) -> None:
    start = last_notice = time.time()
    if try_acquire():
        return
    if on_wait:
        on_wait(holder())
    while not try_acquire():
        now = time.time()
        if now - start > timeout:
            raise LockTimeout(f"{path} still held by {holder()} after {timeout:g} s; stop that process if it is "
                              f"stuck, or wait longer: {WAIT_ENV}=SECONDS")
        if on_wait and now - last_notice > WAIT_NOTICE_SECONDS:
            on_wait(holder())
            last_notice = now
        time.sleep(POLL_SECONDS)
