"""Long-running services of the cluster test, each a process group the test owns.

Every service binds 127.0.0.1 on a free port and runs in its own session
(``start_new_session=True``), so it is stopped by signalling that process group only:
nothing another user or test runs is ever touched (no ``ray stop``, no kill by name).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

BIN = Path(sys.executable).parent


def free_port() -> int:
    """A TCP port nobody listens on at the moment (the OS picks it)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port(port: int, timeout: float, what: str, proc: subprocess.Popen | None = None) -> None:
    """Block until something accepts connections on 127.0.0.1:``port``; fail naming
    ``what`` after ``timeout`` seconds, or at once when ``proc`` exits first."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"{what} exited with code {proc.returncode} before listening on :{port}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.3)
    raise TimeoutError(f"{what}: nothing listening on 127.0.0.1:{port} after {timeout:.0f} s")


@dataclass
class Service:
    """One process group started by the test, with its log file."""

    name: str
    proc: subprocess.Popen
    log_path: Path
    _log: IO[str] = field(repr=False)

    @classmethod
    def start(cls, name: str, cmd: list[str], env: dict[str, str], log_path: Path) -> Service:
        log = open(log_path, "w")  # noqa: SIM115 - closed by stop()
        proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)
        return cls(name, proc, log_path, log)

    @property
    def pgid(self) -> int:
        return self.proc.pid  # start_new_session: the leader's pid is the group id

    def kill(self) -> None:
        """SIGKILL the whole group at once (a node lost with everything on it)."""
        try:
            os.killpg(self.pgid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait(timeout=30)

    def stop(self, grace: float = 30.0) -> None:
        """SIGTERM the group (``ray start --block`` then stops its node's processes),
        SIGKILL what is left after ``grace`` seconds."""
        if self.proc.poll() is None:
            try:
                os.killpg(self.pgid, signal.SIGTERM)
                self.proc.wait(timeout=grace)
            except ProcessLookupError:
                pass
            except subprocess.TimeoutExpired:
                pass
        try:  # the leader may be gone while children of its group live on
            os.killpg(self.pgid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        if self.proc.poll() is None:
            self.proc.wait(timeout=30)
        self._log.close()

    def tail(self, chars: int = 3000) -> str:
        self._log.flush()
        return self.log_path.read_text(errors="replace")[-chars:]


def processes_mentioning(marker: str) -> list[int]:
    """PIDs of this user's processes whose command line contains ``marker`` (a temp dir
    only this test uses): what a stopped node must not leave behind."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if entry.stat().st_uid != os.getuid():
                continue
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except (FileNotFoundError, PermissionError, ProcessLookupError):
            continue
        if marker in cmdline:
            pids.append(int(entry.name))
    return pids
