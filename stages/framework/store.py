"""Artifact store: ``<root>/<stage>/<key>/`` directories published atomically.

A stage writes into a private scratch directory. Publishing adds ``_nugget_manifest.json``
(metrics, producing MLflow run, timings, and the size and sha256 of every file) and then
the ``_COMPLETE`` marker *last*; an output counts as complete only when its marker exists,
its manifest parses, both name the folder's stage and key (`identity_problems`: a folder
moved or copied by hand is not that output), the manifest lists the files, each inside the
folder, and they have the published sizes, so a crash at any point leaves nothing that
looks complete and the next run redoes the stage. Readers check the bytes
(`stages.framework.checksums`): a damaged cached output is named, not read.

- Local roots (plain paths, ``file://``): scratch is ``<root>/<stage>/.tmp-<key>-<uuid>``
  on the same filesystem, and publishing is one ``rename`` of the whole directory. A
  forced replace swaps old and new in one ``renameat2(RENAME_EXCHANGE)`` (Linux), after
  the readers of the old output are done (`stages.framework.locks`); elsewhere it renames
  the old one aside first, and a crash between the two renames is undone by the next
  access (the aside copy is renamed back).
- Other fsspec roots (``s3://``, ``gs://``, ``memory://``, ...): scratch is a local temp
  dir; publishing uploads the files, then writes the marker (a replace deletes the old
  marker first). Readers on another node download a completed artifact once into a local
  cache directory and check it before use.

Scratch left by a crash is removed by the next process that holds the key's compute lock
(`sweep`; the executor sweeps every planned stage when it starts), never while the
process that made it may still run.
"""

from __future__ import annotations

import ctypes
import json
import logging
import os
import shutil
import tempfile
import uuid
from pathlib import Path
from typing import Any

import fsspec
from fsspec.implementations.local import LocalFileSystem

from stages.framework.checksums import FileTable, damage, file_table, table_problems
from stages.framework.locks import FileLock, LeaseLock, wait_bound
from stages.framework.stage import Artifact

MARKER = "_COMPLETE"
READERS_WAIT_S = 86400.0  # a forced replace waits for the stages reading the old output: hours
MANIFEST = "_nugget_manifest.json"
BOOKKEEPING = frozenset({MARKER, MANIFEST})
log = logging.getLogger("nugget.pipeline")
# remote roots stage their scratch here, one folder per process (pid in the name)
REMOTE_SCRATCH = Path(tempfile.gettempdir()) / "nugget-scratch"


class MissingArtifactError(RuntimeError):
    """An upstream output a stage needs has not been produced for this config."""


class CorruptArtifactError(RuntimeError):
    """A cached output's files differ from what its manifest says was published."""


def _exchange(a: str, b: str) -> bool:
    """Swap two paths in one atomic step (Linux ``renameat2(RENAME_EXCHANGE)``); False
    where the platform cannot."""
    try:
        renameat2 = ctypes.CDLL(None, use_errno=True).renameat2
    except (AttributeError, OSError):
        return False
    at_fdcwd, rename_exchange = -100, 2
    if renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0:
        return True
    err = ctypes.get_errno()
    if err in (22, 38, 95):  # EINVAL / ENOSYS / EOPNOTSUPP: the filesystem cannot exchange
        return False
    raise OSError(err, os.strerror(err), a)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def identity_problems(stage: str, key: str, marker: str, manifest: Any) -> list[str]:
    """Why an output folder at ``<root>/<stage>/<key>`` is not that output: its marker or
    manifest names another key or stage (a key folder copied or renamed by hand), or its
    manifest lists no files (every integrity check reads that list; an output with none
    could be anything)."""
    if not isinstance(manifest, dict):
        return [f"{MANIFEST} is not a JSON object"]
    problems = []
    if marker != key:
        problems.append(f"{MARKER} names key {marker!r}, not the folder's {key}")
    for field, value in (("stage", stage), ("key", key)):
        if manifest.get(field) != value:
            problems.append(f"{MANIFEST} names {field} {manifest.get(field)!r}, not the folder's {value!r}")
    files = manifest.get("files")
    if not isinstance(files, dict) or not files:
        problems.append(f"{MANIFEST} lists no files (written by hand or by an older version)")
    else:
        problems.extend(table_problems(files))
    return problems


class ArtifactStore:
    def __init__(self, root: str, cache_dir: Path | None = None) -> None:
        expanded = os.path.expanduser(root)
        self.fs, base = fsspec.core.url_to_fs(expanded)
        self.local = isinstance(self.fs, LocalFileSystem)
        self.base = str(Path(base).resolve()) if self.local else base.rstrip("/")
        self.root_uri = self.base if self.local else expanded.rstrip("/")
        self.cache_dir = cache_dir or Path(
            os.path.expanduser("~/.cache/nugget-pipeline/artifact-cache")
        )

    # -- locations ---------------------------------------------------------------
    def _dir(self, stage: str, key: str) -> str:
        return f"{self.base}/{stage}/{key}"

    def uri(self, stage: str, key: str) -> str:
        return self._dir(stage, key) if self.local else f"{self.root_uri}/{stage}/{key}"

    def work_uri(self, stage: str, key: str) -> str:
        """Durable working space of (stage, key) that outlives a crashed attempt (e.g. Ray
        Train checkpoints to resume from); removed once the output is published."""
        return f"{self.uri(stage, key).rsplit('/', 1)[0]}/.work-{key}"

    def drop_work(self, stage: str, key: str) -> None:
        """Remove the working space of (stage, key); called once its output is published."""
        path = f"{self.base}/{stage}/.work-{key}"
        if self.fs.exists(path):
            self.fs.rm(path, recursive=True)

    # -- locks (stages.framework.locks) ------------------------------------------
    def _lock_path(self, stage: str, key: str, kind: str) -> str:
        """``<root>/.locks/<stage>/<key>.<kind>``: beside, not inside, the stage folders."""
        folder = f"{self.base}/.locks/{stage}"
        if self.local:
            Path(folder).mkdir(parents=True, exist_ok=True)
        return f"{folder}/{key}.{kind}"

    def lock(self, stage: str, key: str) -> FileLock | LeaseLock:
        """The compute lock of (stage, key): held while it is computed and published."""
        if self.local:
            return FileLock(self._lock_path(stage, key, "compute"))
        return LeaseLock(self.fs, self._lock_path(stage, key, "lease.json"))

    def read_lock(self, stage: str, key: str, replace: bool = False) -> FileLock | None:
        """The lock on a local output that a stage reading it holds shared, and a replace
        exclusive (None for remote roots, whose readers use their own copy)."""
        if not self.local:
            return None
        return FileLock(self._lock_path(stage, key, "read"), shared=not replace)

    # -- state -------------------------------------------------------------------
    def state(self, stage: str, key: str) -> tuple[bool, str]:
        """(complete, why not): the marker exists and names ``key``, the manifest parses,
        names this folder's stage and key and lists the files, and every file has its
        published size (sizes only: cheap enough for planning)."""
        final = self._dir(stage, key)
        if self.local:
            self._recover(stage, key)
        if not self.fs.exists(f"{final}/{MARKER}"):
            return False, "absent"
        try:
            marker = self.fs.cat_file(f"{final}/{MARKER}").decode("utf-8", "replace").strip()
            manifest = self.manifest(stage, key)
        except (OSError, ValueError) as exc:
            return False, f"damaged: {MANIFEST} unreadable ({type(exc).__name__}: {exc})"
        wrong = identity_problems(stage, key, marker, manifest)
        if wrong:
            return False, "damaged: " + "; ".join(wrong)
        table: FileTable = manifest["files"]
        if self.local:
            problems = damage(Path(final), table, hashes=False)
        else:
            sizes = {p[len(final) + 1:]: int(d.get("size") or 0)
                     for p, d in self.fs.find(final, detail=True).items()}
            problems = [f"{rel}: missing" if rel not in sizes else f"{rel}: {sizes[rel]} bytes, published with {size}"
                        for rel, (size, _) in sorted(table.items()) if sizes.get(rel) != size]
        if problems:
            return False, "damaged: " + "; ".join(problems[:3])
        return True, "complete"

    def is_complete(self, stage: str, key: str) -> bool:
        return self.state(stage, key)[0]

    def _recover(self, stage: str, key: str) -> None:
        """Undo a replace cut between its two renames (platforms without an atomic
        exchange): the old output aside, no output in place -> rename the old one back."""
        final = Path(self._dir(stage, key))
        if final.exists() or not final.parent.is_dir() or not self._asides(final):
            return
        lock = self.lock(stage, key)
        if not lock.try_acquire():
            return  # a replace is in progress (its publisher holds the lock), not cut short
        try:
            self._recover_locked(final)
        finally:
            lock.release()

    @staticmethod
    def _asides(final: Path) -> list[Path]:
        return [a for a in sorted(final.parent.glob(f".old-{final.name}-*")) if (a / MARKER).exists()]

    def _recover_locked(self, final: Path) -> None:
        """`_recover` for a caller holding the key's compute lock."""
        if final.exists():
            return
        for aside in self._asides(final):
            try:
                os.rename(aside, final)
            except OSError:
                continue  # another process recovered it first
            return

    # -- writing -----------------------------------------------------------------
    def scratch(self, stage: str, key: str) -> Path:
        """A fresh private directory for a stage to write its output into. The caller holds
        the compute lock of (stage, key), so older scratch of this key is a crash leftover."""
        if self.local:
            parent = Path(self.base) / stage
            parent.mkdir(parents=True, exist_ok=True)
            for old in parent.glob(f".tmp-{key}-*"):
                shutil.rmtree(old, ignore_errors=True)
            path = parent / f".tmp-{key}-{uuid.uuid4().hex[:8]}"
            path.mkdir()
            return path
        REMOTE_SCRATCH.mkdir(parents=True, exist_ok=True)
        return Path(tempfile.mkdtemp(prefix=f"{os.getpid()}-{stage}-{key}-", dir=REMOTE_SCRATCH))

    def sweep(self, stage: str) -> list[str]:
        """Remove the crash leftovers of ``stage``: scratch and set-aside folders of every key
        nobody holds the compute lock of (and, for remote roots, this machine's local scratch
        of dead processes). Returns what was removed."""
        removed: list[str] = []
        if not self.local:
            for old in REMOTE_SCRATCH.glob(f"*-{stage}-*"):
                pid = old.name.split("-", 1)[0]
                if pid.isdigit() and not _pid_alive(int(pid)):
                    shutil.rmtree(old, ignore_errors=True)
                    removed.append(str(old))
            return removed
        parent = Path(self.base) / stage
        leftovers: dict[str, list[Path]] = {}
        for old in [*parent.glob(".tmp-*"), *parent.glob(".old-*")]:
            leftovers.setdefault(old.name.split("-")[1], []).append(old)
        for key, paths in leftovers.items():
            lock = self.lock(stage, key)
            if not lock.try_acquire():
                continue  # being computed right now
            try:
                self._recover_locked(parent / key)  # before the set-aside copies go
                for old in paths:
                    if old.exists():
                        shutil.rmtree(old, ignore_errors=True)
                        removed.append(str(old))
            finally:
                lock.release()
        return removed

    def discard(self, scratch: Path) -> None:
        shutil.rmtree(scratch, ignore_errors=True)

    def publish(self, stage: str, key: str, scratch: Path, manifest: dict[str, Any]) -> str:
        """Make ``scratch`` the completed output of (stage, key); returns its URI.

        If a complete output already exists (a concurrent run won, or ``--force``
        recomputed it) the new one replaces it only when the run was forced in the
        manifest (``forced``); otherwise the existing one is kept, the scratch discarded.
        A damaged or incomplete one is always replaced.
        """
        for field, value in (("stage", stage), ("key", key)):
            if manifest.get(field, value) != value:
                raise ValueError(f"publishing {stage}/{key} with a manifest of {field} {manifest[field]!r}")
        manifest = {**manifest, "stage": stage, "key": key, "files": file_table(scratch, skip=BOOKKEEPING)}
        (scratch / MANIFEST).write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
        (scratch / MARKER).write_text(key + "\n")
        replace = bool(manifest.get("forced"))
        if self.local:
            self._publish_local(stage, key, scratch, replace)
        else:
            self._publish_remote(stage, key, scratch, replace)
        return self.uri(stage, key)

    def _publish_local(self, stage: str, key: str, scratch: Path, replace: bool) -> None:
        final = Path(self._dir(stage, key))
        if not final.exists():
            os.rename(scratch, final)
            return
        complete = self.is_complete(stage, key)
        if complete and not replace:
            self.discard(scratch)
            return
        readers = self.read_lock(stage, key, replace=True)
        assert readers is not None  # a local root
        # waits for every stage still reading the old output
        # readers share the lock and leave no name in it: the message names the lock file
        readers.acquire(on_wait=lambda _: log.info("%s %s: replace waits for the stages reading it (shared lock %s)",
                                                   stage, key, readers.path),
                        timeout=wait_bound(READERS_WAIT_S))
        try:
            if _exchange(str(scratch), str(final)):
                self.discard(scratch)  # now holds the old output
                return
            aside = final.with_name(f".old-{key}-{uuid.uuid4().hex[:8]}")
            os.rename(final, aside)  # a crash right here is undone by _recover
            os.rename(scratch, final)
            shutil.rmtree(aside, ignore_errors=True)
        finally:
            readers.release()

    def _publish_remote(self, stage: str, key: str, scratch: Path, replace: bool) -> None:
        final = self._dir(stage, key)
        if self.fs.exists(final):
            if self.is_complete(stage, key) and not replace:
                self.discard(scratch)
                return
            if self.fs.exists(f"{final}/{MARKER}"):
                self.fs.rm_file(f"{final}/{MARKER}")  # first: never complete while replaced
            self.fs.rm(final, recursive=True)
        files = sorted(p for p in scratch.rglob("*") if p.is_file() and p.name != MARKER)
        for path in files:
            self.fs.put_file(str(path), f"{final}/{path.relative_to(scratch).as_posix()}")
        self.fs.put_file(str(scratch / MARKER), f"{final}/{MARKER}")
        self.discard(scratch)

    # -- reading -----------------------------------------------------------------
    def manifest(self, stage: str, key: str) -> dict[str, Any]:
        with self.fs.open(f"{self._dir(stage, key)}/{MANIFEST}", "r") as fh:
            return json.load(fh)

    def manifests(self, stage: str) -> list[dict[str, Any]]:
        """The manifests of every output of ``stage`` in the store, any key (an unreadable
        one is left out: `state` names it when its key is asked for)."""
        found = []
        for path in self.fs.glob(f"{self.base}/{stage}/*/{MANIFEST}"):
            try:
                manifest = json.loads(self.fs.cat_file(path))
            except (OSError, ValueError):
                continue
            if isinstance(manifest, dict):
                found.append(manifest)
        return found

    def _damaged(self, stage: str, key: str, why: str) -> CorruptArtifactError:
        return CorruptArtifactError(
            f"cached output of stage {stage!r} (key {key}) at {self.uri(stage, key)} is damaged: "
            f"{why}; recompute it with: python -m pipelines.stage {stage} --force <the run's overrides>"
        )

    def artifact(self, stage: str, key: str) -> Artifact:
        """A completed output with a local path (downloaded once for remote roots), its
        files checked against the sha256 published in its manifest."""
        complete, why = self.state(stage, key)
        if not complete:
            if why.startswith("damaged"):
                raise self._damaged(stage, key, why.removeprefix("damaged: "))
            raise MissingArtifactError(
                f"stage {stage!r} has no completed output for key {key} under {self.root_uri}"
            )
        manifest = self.manifest(stage, key)
        table: FileTable = manifest["files"]  # `state` checked that it lists the files
        if self.local:
            path = Path(self._dir(stage, key))
            problems = damage(path, table)
        else:
            path = self.cache_dir / stage / key
            problems = damage(path, table, hashes=False) if (path / MARKER).exists() else ["absent"]
            if problems:  # not downloaded yet, or a stale/partial copy
                problems = self._download(stage, key, path, table)
        if problems:
            raise self._damaged(stage, key, "; ".join(problems[:5]))
        return Artifact(stage, key, self.uri(stage, key), path, manifest)

    def _download(self, stage: str, key: str, path: Path, table: FileTable) -> list[str]:
        """Download (stage, key) into ``path`` via a temp folder checked before the rename."""
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".tmp-{key}-{uuid.uuid4().hex[:8]}")
        try:
            self.fs.get(self._dir(stage, key) + "/", str(tmp), recursive=True)
            problems = damage(tmp, table)
            if problems:
                return problems
            if path.exists():
                shutil.rmtree(path)
            os.rename(tmp, path)
            return []
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
