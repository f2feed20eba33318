"""The tracking store's state in the preflight: what `Tracker` would refuse, seen by
``--dry-run`` too, without writing to the store.

A real run opens the tracker before Ray starts and stops (exit 2) on a deleted experiment
of ``run.experiment`` or on the sqlite store's setup lock held past its bound; a dry run
never opened the tracker and said "nothing would stop the run". Here:

- a sqlite store that exists: its setup lock (``<db>.lock``) is tried without waiting (a
  holder is named), and the experiment's lifecycle is read with a read-only connection
  (MLflow's client would create or migrate the schema: a write);
- an ``http(s)`` server that answered the preflight's probe: the experiment is looked up
  with MLflow's client (one read request).

Other stores (postgres, mysql, ...) are left to the run, as their client may migrate.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING

from stages.config.uris import sqlite_file, tracking_scheme
from stages.framework.locks import WAIT_ENV, wait_bound
from stages.framework.preflight import CONFIG, Problem
from stages.framework.tracking import (
    TRACKER_LOCK_WAIT_S,
    default_tracking_uri,
    deleted_message,
    setup_lock,
)

if TYPE_CHECKING:
    from stages.config.schema import PipelineConfig
    from stages.framework.store import ArtifactStore


def _sqlite_experiment(db: Path, experiment: str) -> tuple[str, str] | None:
    """(id, lifecycle stage) of ``experiment`` in the MLflow sqlite store ``db``, read
    only; None when absent or unreadable (the run's own setup says why)."""
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=2) as conn:
            row = conn.execute("SELECT experiment_id, lifecycle_stage FROM experiments WHERE name = ?",
                               (experiment,)).fetchone()
    except sqlite3.Error:
        return None
    return (str(row[0]), str(row[1])) if row else None


def _sqlite_problems(db: Path, experiment: str, uri: str) -> list[Problem]:
    if not db.is_file():
        return []  # a fresh store: the run creates it
    lock = setup_lock(db)
    if not lock.try_acquire():
        bound = wait_bound(TRACKER_LOCK_WAIT_S)
        return [Problem(CONFIG, f"run.tracking_uri: the MLflow store {db} is held by {lock.holder()} ({lock.path}, "
                                f"held while a store is created or migrated); a run waits up to {bound:g} s for it "
                                f"(${WAIT_ENV}), then stops. Stop that process if it is stuck")]
    try:
        found = _sqlite_experiment(db, experiment)
    finally:
        lock.release()
    if found and found[1] == "deleted":
        return [Problem(CONFIG, deleted_message(experiment, found[0], uri))]
    return []


def _server_problems(uri: str, experiment: str) -> list[Problem]:
    from mlflow.tracking import MlflowClient

    found = MlflowClient(tracking_uri=uri).get_experiment_by_name(experiment)
    if found is not None and found.lifecycle_stage == "deleted":
        return [Problem(CONFIG, deleted_message(experiment, found.experiment_id, uri))]
    return []


def tracker_problems(cfg: PipelineConfig, store: ArtifactStore, earlier: list[Problem], probe: bool = True) -> list[Problem]:
    """What `Tracker` would refuse for ``cfg``'s tracking store and experiment; nothing
    when ``earlier`` problems already name ``run.tracking_uri`` or ``run.artifact_root``
    (the store cannot be read) or, for a server, when ``probe`` is off."""
    if any(p.message.startswith(("run.tracking_uri", "run.artifact_root")) for p in earlier):
        return []
    if not cfg.run.tracking_uri and not store.local:
        return []  # the config check says run.tracking_uri must be set
    uri = default_tracking_uri(cfg.run.tracking_uri, store.local, store.base, create=False)
    db = sqlite_file(uri)
    if db is not None:
        return _sqlite_problems(db, cfg.run.experiment, uri)
    if probe and tracking_scheme(uri) in ("http", "https"):
        return _server_problems(uri, cfg.run.experiment)
    return []
