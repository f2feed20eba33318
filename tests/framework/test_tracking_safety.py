"""MLflow bookkeeping under crashes, copies and concurrency: orphaned runs, a moved root,
concurrent setup of a fresh sqlite store, credentials kept out."""

from __future__ import annotations

import multiprocessing
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from stages.framework.orphans import (
    DRIVER_TAG,
    HEARTBEAT_TAG,
    ORPHANED_TAG,
    driver_identity,
    mark_orphaned_runs,
)
from stages.framework.redact import redact
from stages.framework.tracking import Tracker
from tests.framework.lock_holder import lock_held_elsewhere


def _tracker(root: Path) -> Tracker:
    return Tracker(f"sqlite:///{root}/mlflow.db", "exp", artifact_location=f"{root}/mlflow-artifacts")


def _dead_identity() -> str:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    identity = f"{driver_identity().rsplit(':', 2)[0]}:{proc.pid}:{int(time.time())}"
    proc.wait()
    return identity


def test_runs_of_dead_drivers_are_marked_failed(tmp_path):
    tracker = _tracker(tmp_path)
    dead = tracker.start_run("dead parent", {DRIVER_TAG: _dead_identity()})
    nested = tracker.start_run("its trial", {}, parent=dead.run_id)  # no driver tag (a worker's)
    alive = tracker.start_run("this driver", {DRIVER_TAG: driver_identity()})
    remote_stale = tracker.start_run("other host, silent", {DRIVER_TAG: "elsewhere:12:34",
                                                            HEARTBEAT_TAG: str(time.time() - 3600)})
    remote_live = tracker.start_run("other host, beating", {DRIVER_TAG: "elsewhere:56:78",
                                                            HEARTBEAT_TAG: str(time.time())})
    found = mark_orphaned_runs(tracker.client, tracker.experiment_id)
    assert set(found) == {dead.run_id, nested.run_id, remote_stale.run_id}
    client = MlflowClient(tracker.tracking_uri)
    for run_id in found:
        run = client.get_run(run_id)
        assert run.info.status == "FAILED" and run.data.tags[ORPHANED_TAG]
    assert "is gone" in client.get_run(dead.run_id).data.tags[ORPHANED_TAG]
    assert client.get_run(alive.run_id).info.status == "RUNNING"
    assert client.get_run(remote_live.run_id).info.status == "RUNNING"


def test_artifact_location_follows_a_copied_root(tmp_path):
    first = tmp_path / "first"
    tracker = _tracker(first)
    run = tracker.start_run("r", {})
    run.log_text("hello", "note.txt")
    run.end()
    copy = tmp_path / "copy"
    shutil.copytree(first, copy)
    moved = _tracker(copy)
    client = MlflowClient(moved.tracking_uri)
    assert client.get_experiment(moved.experiment_id).artifact_location == f"{copy}/mlflow-artifacts"
    assert client.get_run(run.run_id).info.artifact_uri.startswith(f"{copy}/mlflow-artifacts/")
    again = moved.start_run("r2", {})
    again.log_text("new", "note.txt")
    assert (copy / "mlflow-artifacts" / again.run_id / "artifacts" / "note.txt").exists()
    assert not (first / "mlflow-artifacts" / again.run_id).exists()  # nothing written into the original


def _set_up(root: str) -> str:
    try:
        tracker = _tracker(Path(root))
        tracker.start_run("concurrent", {}).end()
        return "ok"
    except Exception as exc:  # reported to the test, which names it
        return f"{type(exc).__name__}: {exc}"


def test_concurrent_setup_of_a_fresh_sqlite_store(tmp_path):
    """Two invocations on a fresh root used to die in MLflow's migration (alembic
    "table _alembic_tmp_params already exists", or "Online migration expected to match one
    row": this test without the lock)."""
    with multiprocessing.get_context("spawn").Pool(3) as pool:
        results = pool.map(_set_up, [str(tmp_path)] * 3)
    assert results == ["ok"] * 3
    import sqlite3

    with sqlite3.connect(tmp_path / "mlflow.db") as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


@pytest.mark.parametrize(("raw", "logged"), [
    ("http://alice:s3cret@mlflow.example:5000", "http://***@mlflow.example:5000"),
    ("https://token@host/path", "https://***@host/path"),
    ("s3://bucket/nugget?X-Amz-Signature=abc&region=us", "s3://bucket/nugget?X-Amz-Signature=***&region=us"),
    ("http://host:5000/?token=abc", "http://host:5000/?token=***"),
    ("sqlite:////data/mlflow.db", "sqlite:////data/mlflow.db"),
    ("s3://bucket/nugget", "s3://bucket/nugget"),
    ("run:\n  tracking_uri: http://u:p@h:1\n", "run:\n  tracking_uri: http://***@h:1\n"),
])
def test_credentials_never_reach_mlflow(raw, logged):
    assert redact(raw) == logged


def test_logged_params_and_tags_are_redacted(tmp_path):
    tracker = _tracker(tmp_path)
    run = tracker.start_run("r", {"artifact_uri": "s3://key:secret@bucket/x"})
    run.log_params({"run": {"tracking_uri": "http://u:pw@h:5000"}})
    got = MlflowClient(tracker.tracking_uri).get_run(run.run_id).data
    assert got.params["run.tracking_uri"] == "http://***@h:5000"
    assert got.tags["artifact_uri"] == "s3://***@bucket/x"


@pytest.mark.timeout(60)  # the old wait had no bound: it hung here
def test_a_held_store_lock_is_named_and_bounded(tmp_path, base_args, root, monkeypatch, capsys):
    from pipelines.cli import main_full
    from tests.framework.fake_stages import STATS_DAG

    root.mkdir(parents=True)
    lock = root / "mlflow.db.lock"
    with lock_held_elsewhere(lock) as holder:
        monkeypatch.setenv("NUGGET_LOCK_WAIT_S", "1")
        start = time.time()
        assert main_full(base_args, dag=STATS_DAG) == 2
        assert time.time() - start < 30
    err = capsys.readouterr().err
    assert f"{lock} still held by " in err and f":{holder.pid} since" in err and "NUGGET_LOCK_WAIT_S" in err
    waiting = [line for line in err.splitlines() if "waiting for" in line]  # said at once, before the bound
    assert waiting and f":{holder.pid} since" in waiting[0] and str(lock) in waiting[0]


def test_a_deleted_experiment_says_how_to_restore_it(tmp_path, base_args, root, capsys):
    from pipelines.cli import main_full
    from tests.framework.fake_stages import STATS_DAG

    # the CLI's default store (<root>/mlflow.db) and experiment
    tracker = Tracker(f"sqlite:///{root}/mlflow.db", "nugget-pipeline", artifact_location=f"{root}/mlflow-artifacts")
    tracker.client.delete_experiment(tracker.experiment_id)
    assert main_full(base_args, dag=STATS_DAG) == 2
    err = capsys.readouterr().err
    assert "run.experiment" in err and "run.experiment=NEW_NAME" in err
    restore = next(line.strip() for line in err.splitlines() if "mlflow experiments restore" in line)
    assert restore.endswith(f"--experiment-id {tracker.experiment_id}")
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    subprocess.run(restore, shell=True, check=True, env=env, capture_output=True)  # the command as printed works
    again = Tracker(f"sqlite:///{root}/mlflow.db", "nugget-pipeline", artifact_location=f"{root}/mlflow-artifacts")
    assert again.experiment_id == tracker.experiment_id


def test_a_dry_run_names_a_held_store_lock_without_waiting(base_args, root, capsys):
    """``--dry-run`` said "nothing would stop the run" (exit 0) while the store's lock was held."""
    from pipelines.cli import main_full
    from tests.framework.fake_stages import STATS_DAG

    Tracker(f"sqlite:///{root}/mlflow.db", "nugget-pipeline", artifact_location=f"{root}/mlflow-artifacts")
    lock = root / "mlflow.db.lock"
    with lock_held_elsewhere(lock) as holder:
        start = time.time()
        assert main_full(["--dry-run", *base_args], dag=STATS_DAG) == 2
        assert time.time() - start < 30
    err = capsys.readouterr().err
    assert f"run.tracking_uri: the MLflow store {root / 'mlflow.db'} is held by " in err
    assert f":{holder.pid} since" in err and "NUGGET_LOCK_WAIT_S" in err


def test_a_dry_run_names_a_deleted_experiment(base_args, root, capsys):
    """``--dry-run`` never opened the tracker, so it passed (exit 0) what the run refuses."""
    from pipelines.cli import main_full
    from tests.framework.fake_stages import STATS_DAG

    tracker = Tracker(f"sqlite:///{root}/mlflow.db", "nugget-pipeline", artifact_location=f"{root}/mlflow-artifacts")
    tracker.client.delete_experiment(tracker.experiment_id)
    before = (root / "mlflow.db").stat().st_mtime_ns
    assert main_full(["--dry-run", *base_args], dag=STATS_DAG) == 2
    err = capsys.readouterr().err
    assert f"mlflow experiments restore --experiment-id {tracker.experiment_id}" in err
    assert "run.experiment=NEW_NAME" in err
    assert (root / "mlflow.db").stat().st_mtime_ns == before  # the dry run wrote nothing to the store
    assert main_full(["--dry-run", *base_args, "run.experiment=another"], dag=STATS_DAG) == 0
