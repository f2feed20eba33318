"""Artifact store: ``<root>/<stage>/<key>/`` directories published atomically.

A stage writes into a private scratch directory. Publishing adds ``_nugget_manifest.json``
(metrics, producing MLflow run, timings) and then the ``_COMPLETE`` marker *last*; an
output counts as present only when its marker exists, so a crash at any point leaves
nothing that looks complete and the next run redoes the stage.

- Local roots (plain paths, ``file://``): scratch is ``<root>/<stage>/.tmp-<key>-<uuid>``
  on the same filesystem, and publishing is one ``rename`` of the whole directory.
- Other fsspec roots (``s3://``, ``gs://``, ``memory://``, ...): scratch is a local temp
  dir; publishing uploads the files, then writes the marker. Readers on another node
  download a completed artifact once into a local cache directory.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import fsspec
from fsspec.implementations.local import LocalFileSystem

from stages.framework.stage import Artifact

MARKER = "_COMPLETE"
MANIFEST = "_nugget_manifest.json"
STALE_SCRATCH_SECONDS = 24 * 3600  # older scratch dirs are crash leftovers, not live runs


class MissingArtifactError(RuntimeError):
    """An upstream output a stage needs has not been produced for this config."""


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

    def is_complete(self, stage: str, key: str) -> bool:
        return self.fs.exists(f"{self._dir(stage, key)}/{MARKER}")

    # -- writing -----------------------------------------------------------------
    def scratch(self, stage: str, key: str) -> Path:
        """A fresh private directory for a stage to write its output into."""
        if self.local:
            parent = Path(self.base) / stage
            parent.mkdir(parents=True, exist_ok=True)
            self._remove_stale_scratch(parent)
            path = parent / f".tmp-{key}-{uuid.uuid4().hex[:8]}"
            path.mkdir()
            return path
        return Path(tempfile.mkdtemp(prefix=f"nugget-{stage}-{key}-"))

    @staticmethod
    def _remove_stale_scratch(parent: Path) -> None:
        now = time.time()
        for old in parent.glob(".tmp-*"):
            if now - old.stat().st_mtime > STALE_SCRATCH_SECONDS:
                shutil.rmtree(old, ignore_errors=True)

    def discard(self, scratch: Path) -> None:
        shutil.rmtree(scratch, ignore_errors=True)

    def publish(self, stage: str, key: str, scratch: Path, manifest: dict[str, Any]) -> str:
        """Make ``scratch`` the completed output of (stage, key); returns its URI.

        If a completed output already exists (a concurrent run won, or ``--force``
        recomputed it) the new one replaces it only when the run was forced in the
        manifest (``forced``); otherwise the existing one is kept, the scratch discarded.
        """
        (scratch / MANIFEST).write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
        (scratch / MARKER).write_text(key + "\n")
        final = self._dir(stage, key)
        if self.local:
            self._publish_local(Path(final), scratch, replace=bool(manifest.get("forced")))
        else:
            self._publish_remote(final, scratch)
        return self.uri(stage, key)

    def _publish_local(self, final: Path, scratch: Path, replace: bool) -> None:
        if final.exists():
            if not replace and (final / MARKER).exists():
                self.discard(scratch)
                return
            # an incomplete leftover, or a forced recompute: move the old one aside
            trash = final.with_name(f".old-{final.name}-{uuid.uuid4().hex[:8]}")
            os.rename(final, trash)
            shutil.rmtree(trash, ignore_errors=True)
        os.rename(scratch, final)

    def _publish_remote(self, final: str, scratch: Path) -> None:
        if self.fs.exists(final):
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
        """The manifests of every output of ``stage`` in the store, any key."""
        return [json.loads(self.fs.cat_file(m)) for m in self.fs.glob(f"{self.base}/{stage}/*/{MANIFEST}")]

    def artifact(self, stage: str, key: str) -> Artifact:
        """A completed output with a local path (downloaded once for remote roots)."""
        if not self.is_complete(stage, key):
            raise MissingArtifactError(
                f"stage {stage!r} has no completed output for key {key} under {self.root_uri}"
            )
        if self.local:
            path = Path(self._dir(stage, key))
        else:
            path = self.cache_dir / stage / key
            if not (path / MARKER).exists():
                tmp = path.with_name(f".tmp-{key}-{uuid.uuid4().hex[:8]}")
                self.fs.get(self._dir(stage, key) + "/", str(tmp), recursive=True)
                path.parent.mkdir(parents=True, exist_ok=True)
                if path.exists():
                    shutil.rmtree(path)
                os.rename(tmp, path)
        return Artifact(stage, key, self.uri(stage, key), path, self.manifest(stage, key))
