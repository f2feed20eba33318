"""Disk checks of the preflight: the folders the planned stages write into, and the free
space they need, before Ray starts (`stages.framework.plan_checks` runs them with the other
places, `stages.framework.preflight`).

Otherwise they fail inside the run: a read-only stage folder under a writable root
(``chmod a-w <root>/<stage>``) in the stage's Ray task; a full disk under the root in a
stage without naming the path, and one under the sqlite tracking store as an MLflow
traceback after Ray started (docs/reliability.md).

- every stage that will run writes ``<root>/<stage>/`` (scratch, lock, output): that folder,
  where it exists, must accept a file (`stage_folder_problems`);
- the file system of a local artifact root must have free the sizes the planned stages'
  outputs had when they last ran (their manifests' file tables, any key: the best guess
  of what they write again), plus `HEADROOM_BYTES` for stages never measured, logs and
  the tracking store; a sqlite tracking store on another file system must have
  `HEADROOM_BYTES` free (`space_problems`). Free space is read with `shutil.disk_usage`.

Remote roots (``s3://``...) are left alone: neither check is cheap nor bounded there.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from stages.config.uris import sqlite_file
from stages.framework.preflight import CONFIG, Problem, closest_existing, writable_problem

if TYPE_CHECKING:
    from stages.config.schema import PipelineConfig
    from stages.framework.stage import Stage
    from stages.framework.store import ArtifactStore

# what a run needs free beyond the outputs measured before: the default tracking store and
# logs grow by a few MiB per run, and a stage that never ran has no measured size (the tiny
# profile's largest outputs, the trained models, are tens of MiB)
HEADROOM_BYTES = 256 << 20
MIB = 1 << 20


def stage_folder_problems(store: ArtifactStore, running: Iterable[type[Stage]]) -> list[Problem]:
    """``<root>/<stage>`` of each stage to run (classes), where it exists, accepts a file
    (a missing one is created under the root, whose own check covers it)."""
    if not store.local:
        return []
    found = []
    for stage in running:
        folder = Path(store.base) / stage.name
        if folder.exists():
            problem = writable_problem(folder, "run.artifact_root", f"{folder} (the folder of stage {stage.name})")
            if problem:
                found.append(problem)
    return found


def output_bytes(store: ArtifactStore, name: str) -> int:
    """The size of stage ``name``'s latest published output in ``store`` (its manifest's
    file table), 0 when it never ran or the manifests cannot be read."""
    try:
        manifests = store.manifests(name)
    except (OSError, ValueError):
        return 0
    latest = max(manifests, key=lambda m: str(m.get("finished_at", "")), default=None)
    table = (latest or {}).get("files") or {}
    try:
        return sum(int(entry[0]) for entry in table.values())
    except (TypeError, ValueError, IndexError, KeyError):
        return 0


def _short(what: str, folder: Path, needed: int) -> Problem | None:
    where = closest_existing(folder)
    try:
        free = shutil.disk_usage(where).free
    except OSError:
        return None  # an unreadable place: its writability check names it
    if free >= needed:
        return None
    return Problem(CONFIG, f"{what}: {folder} has {free / MIB:.0f} MiB free on its file system ({where}); the run "
                           f"needs about {needed / MIB:.0f} MiB there; free space or move it")


def _device(path: Path) -> int | None:
    try:
        return closest_existing(path).stat().st_dev
    except OSError:
        return None


def space_problems(store: ArtifactStore, running: list[type[Stage]], sqlite_folder: Path | None) -> list[Problem]:
    """The free space a local root and a sqlite tracking store's folder (``None``: the
    default store, inside the root) need (see the module docstring)."""
    if not store.local or not running:  # nothing to run: only the tracker writes, a few KiB
        return []
    root = Path(store.base)
    sizes = {stage.name: output_bytes(store, stage.name) for stage in running}
    needed = sum(sizes.values()) + HEADROOM_BYTES
    measured = [n for n, b in sizes.items() if b]
    what = "run.artifact_root" + (f" (the last outputs of {', '.join(measured)} and {HEADROOM_BYTES // MIB} MiB)"
                                  if measured else f" ({HEADROOM_BYTES // MIB} MiB: no planned stage ran here before)")
    found = [_short(what, root, needed)]
    if sqlite_folder is not None and _device(sqlite_folder) != _device(root):
        found.append(_short("run.tracking_uri (its sqlite folder)", sqlite_folder, HEADROOM_BYTES))
    return [p for p in found if p]


def disk_problems(cfg: PipelineConfig, store: ArtifactStore, running: Iterable[type[Stage]]) -> list[Problem]:
    """Stage folders and free space of the run's local places."""
    running = list(running)
    db = sqlite_file(cfg.run.tracking_uri)
    sqlite = db.expanduser().parent if db is not None else None
    return stage_folder_problems(store, running) + space_problems(store, running, sqlite)
