"""MLflow bookkeeping: one parent run per pipeline invocation, one child run per stage.

Everything goes through ``MlflowClient`` with explicit run ids, so logging works the
same from the driver, a Ray task, or rank 0 of a Ray Train worker group (Train V2
rejects Tune's MLflow callbacks; see docs/environment-notes.md). The driver creates the experiment
before any worker logs (concurrent creation of a fresh sqlite store races).

Stage modules log through `stages.framework.stage.StageContext` (see its module
docstring); the training loop logs through the `RunLogger` it is handed (the stage's,
or a Tune trial's nested run from `NestedRuns`), per-step metrics batched by
`MetricBuffer`.

Sample sizes are params, not metrics: the codebase names the n of a mean ``<name>_n`` (or
``<name>/n``, one n of a table row), and a step-less number drawn as a metric is a bar
chart of a constant. `RunLogger.log_metrics` and `MetricBuffer.add` send such keys
(:func:`is_sample_size`) to the run's params instead, once per run (a step-wise n, e.g.
``eval/dev_loss_n`` at step 0, is the same at every step). The stage's manifest keeps them
among its metrics (`stages.framework.stage.StageContext.log_metrics`), where the report
reads them.

Every param, tag and text is passed through `stages.framework.redact` (no credentials of a
URI reach MLflow); a server's credentials travel in MLflow's environment variables, never in
the URI the runs are logged with (`stages.framework.tracking_auth`). A default sqlite store
(``<root>/mlflow.db``) is set up under a file lock (two invocations on a fresh root would
both run MLflow's schema migration; a waiter names the holder and gives up after
`TRACKER_LOCK_WAIT_S`) and put in WAL mode (readers never block the writers of a concurrent run); writes that still meet
"database is locked" are retried. When the root was copied or moved, the experiment's
artifact location (an absolute path in the database) is rewritten to follow it. A deleted
experiment of the configured name is refused with the command that restores it.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import subprocess
import time
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, TextIO

from mlflow.entities import Metric, Param, RunTag
from mlflow.exceptions import MlflowException
from mlflow.tracking import MlflowClient

from stages.config.uris import shown, sqlite_file
from stages.framework.locks import FileLock, wait_bound
from stages.framework.redact import redact
from stages.framework.tracking_auth import (
    check_worker_credentials,
    has_credentials,
    use_credentials,
)

MAX_PARAM_LEN = 6000  # MLflow's limit on a param value
BATCH = 100  # MLflow's limit on params per log_batch
EXPERIMENT_KIND_TAG, EXPERIMENT_KIND = "mlflow.experimentKind", "custom_model_development"
LOCKED_RETRIES = 8  # "database is locked" from a concurrent sqlite writer: retry, backing off
# MLflow's schema migration of a fresh store takes seconds: a holder of the store's lock for
# this long is stuck ($NUGGET_LOCK_WAIT_S overrides it)
TRACKER_LOCK_WAIT_S = 300.0
log = logging.getLogger("nugget.pipeline")


def setup_lock(db: Path) -> FileLock:
    """The lock held while MLflow's client creates or migrates the schema of the sqlite
    store ``db`` (two invocations on a fresh root would both migrate it)."""
    return FileLock(f"{db}.lock")


def _retry_locked(call: Callable[[], Any]) -> Any:
    for attempt in range(LOCKED_RETRIES):
        try:
            return call()
        except MlflowException as exc:
            if "database is locked" not in str(exc) or attempt == LOCKED_RETRIES - 1:
                raise
            time.sleep(0.2 * 2**attempt)
    raise AssertionError("unreachable")


def default_tracking_uri(tracking_uri: str, store_local: bool, store_base: str, create: bool = True) -> str:
    """The configured URI, else a sqlite file beside the artifacts of a local root (the
    root created unless ``create`` is off: a dry run's look at the store writes nothing)."""
    if tracking_uri:
        return tracking_uri
    if not store_local:
        raise ValueError(
            "run.tracking_uri: must be set (e.g. http://head:5000) when run.artifact_root "
            "is not a local directory"
        )
    if create:
        Path(store_base).mkdir(parents=True, exist_ok=True)
    return f"sqlite:///{Path(store_base).resolve()}/mlflow.db"


def flatten(obj: Any, prefix: str = "") -> dict[str, str]:
    """Nested dicts/lists -> ``{"a.b.c": "value"}`` strings, as MLflow params."""
    out: dict[str, str] = {}
    if isinstance(obj, dict):
        for k, v in obj.items():
            out.update(flatten(v, f"{prefix}{k}."))
    else:
        out[prefix[:-1]] = str(obj)[:MAX_PARAM_LEN]
    return out


def is_sample_size(name: str) -> bool:
    """``<name>_n`` / ``<name>/n``: the number of examples a metric ``<name>`` averages over."""
    return name.endswith(("_n", "/n"))


def _param_number(value: float) -> str:
    """A sample size as a param's text: ``4800``, not ``4800.0``."""
    number = float(value)
    return str(int(number)) if number.is_integer() else repr(number)


def table_columns(rows: list[dict[str, Any]]) -> dict[str, list[Any]]:
    """Rows -> MLflow table columns: the union of the keys, in first-seen order; missing None."""
    columns = list(dict.fromkeys(k for row in rows for k in row))
    return {c: [row.get(c) for row in rows] for c in columns}


def _chunks(items: list[Any], size: int) -> Iterator[list[Any]]:
    for i in range(0, len(items), size):
        yield items[i : i + size]


@dataclass(frozen=True)
class RunFacts:
    """A stage run's place in MLflow (`RunLogger.run_facts`): the tracking URI, experiment
    and run ids, its parent's id ("" for a top-level run), the start time (epoch seconds)
    and tags of the pipeline's parent run (of the run itself when it has none)."""

    tracking_uri: str
    experiment_id: str
    run_id: str
    parent_run_id: str
    started: float
    tags: dict[str, str]


@contextmanager
def _without_type_hint_advice() -> Iterator[None]:
    """Drop MLflow's advice to type-hint ``predict`` (in ANSI colour, twice per logged model: 37
    lines of a tiny run's log); the wrapper's input is unannotated on purpose
    (`stages.training.mlflow_model`). A warnings filter cannot do it: MLflow's own
    ``simplefilter("once")`` around the check goes before it; what is shown can be chosen."""
    previous = warnings.showwarning

    def show(message: Warning | str, category: type[Warning], filename: str, lineno: int,
             file: TextIO | None = None, line: str | None = None) -> None:
        if "Add type hints to the `predict` method" not in str(message):
            previous(message, category, filename, lineno, file, line)

    warnings.showwarning = show
    try:
        yield
    finally:
        warnings.showwarning = previous


class RunLogger:
    """Logs into one existing MLflow run; picklable (re-creates its client lazily).
    ``needs_credentials``: the driver had credentials for the server (they are never
    pickled: a worker reads them from its own environment, `stages.framework.tracking_auth`)."""

    def __init__(self, tracking_uri: str, run_id: str, needs_credentials: bool = False) -> None:
        self.tracking_uri = tracking_uri
        self.run_id = run_id
        self.needs_credentials = needs_credentials
        self._client: MlflowClient | None = None
        self._sizes_logged: dict[str, str] = {}  # sample-size params this process already sent

    def __getstate__(self) -> dict[str, Any]:
        return {"tracking_uri": self.tracking_uri, "run_id": self.run_id,
                "needs_credentials": self.needs_credentials, "_client": None, "_sizes_logged": {}}

    @property
    def client(self) -> MlflowClient:
        if self._client is None:
            check_worker_credentials(self.tracking_uri, self.needs_credentials)
            self._client = MlflowClient(tracking_uri=self.tracking_uri)
        return self._client

    def log_metrics(self, metrics: dict[str, float], step: int | None = None) -> None:
        """Numbers into the run: sample sizes (:func:`is_sample_size`) as params, once; the
        rest as metrics at ``step``."""
        self.log_sample_sizes({k: v for k, v in metrics.items() if is_sample_size(k)})
        now = int(time.time() * 1000)
        batch = [Metric(k, float(v), now, step or 0) for k, v in metrics.items() if not is_sample_size(k)]
        self.log_metric_entities(batch)

    def log_sample_sizes(self, sizes: dict[str, float]) -> None:
        """Sample sizes as params; one this logger already sent with the same value is
        skipped (a step-wise n repeats). A changed value reaches MLflow, which refuses it: two
        different n under one name is a bug to see, not to overwrite."""
        new = {k: text for k, v in sizes.items() if self._sizes_logged.get(k) != (text := _param_number(v))}
        if new:
            items = [Param(k, v) for k, v in new.items()]
            for chunk in _chunks(items, BATCH):
                _retry_locked(partial(self.client.log_batch, self.run_id, params=chunk))
            self._sizes_logged.update(new)

    def log_params(self, params: dict[str, Any]) -> None:
        items = [Param(k, redact(v)) for k, v in flatten(params).items()]
        for chunk in _chunks(items, BATCH):
            _retry_locked(partial(self.client.log_batch, self.run_id, params=chunk))

    def set_tags(self, tags: dict[str, Any]) -> None:
        items = [RunTag(k, redact(str(v))) for k, v in tags.items()]
        _retry_locked(lambda: self.client.log_batch(self.run_id, tags=items))

    def log_artifact(self, path: Path, artifact_path: str | None = None) -> None:
        self.client.log_artifact(self.run_id, str(path), artifact_path)

    def log_artifacts(self, directory: Path, artifact_path: str | None = None) -> None:
        """A whole folder (e.g. an exported model) under ``artifact_path``."""
        self.client.log_artifacts(self.run_id, str(directory), artifact_path)

    def log_model(self, name: str, code: str, readme: Path, **pyfunc: Any) -> str:
        """An MLflow Model (pyfunc flavour from the code file ``code``; ``pyfunc``: the
        further arguments of ``mlflow.pyfunc.log_model``) linked to this run, with the file
        ``readme`` at its root; returns its ``models:/`` URI."""
        import mlflow.pyfunc
        from mlflow.models import Model
        from mlflow.tracking._tracking_service.utils import _use_tracking_uri

        run = self.client.get_run(self.run_id)
        # created here: MLflow's own would go to the active experiment, not this run's
        model = self.client.create_logged_model(run.info.experiment_id, name=name, source_run_id=self.run_id,
                                                params=dict(run.data.params))
        with _use_tracking_uri(self.tracking_uri), _without_type_hint_advice():  # the logged model's store: this run's
            info = Model.log(artifact_path=None, name=name, flavor=mlflow.pyfunc, run_id=self.run_id,
                             model_id=model.model_id, python_model=code, **pyfunc)
        self.client.log_model_artifact(info.model_id, str(readme))
        return info.model_uri

    def log_table(self, data: dict[str, list[Any]], artifact_file: str) -> None:
        """Columns of equal length as an MLflow table (the UI's artifact table view)."""
        self.client.log_table(self.run_id, data=data, artifact_file=artifact_file)

    def log_text(self, text: str, name: str) -> None:
        self.client.log_text(self.run_id, redact(text), name)

    def log_metric_entities(self, metrics: list[Metric]) -> None:
        """Already-built MLflow ``Metric`` entities (own timestamps and steps), batched."""
        for chunk in _chunks(metrics, 1000):
            _retry_locked(partial(self.client.log_batch, self.run_id, metrics=chunk))

    def run_name(self) -> str:
        """The run's name as MLflow shows it (a stage's carries its key parameters)."""
        return self.client.get_run(self.run_id).info.run_name or self.run_id

    def run_facts(self) -> RunFacts:
        """Where this run sits (its experiment, its parent) and the parent's tags and start
        time: the provenance a stage may show of the pipeline run producing it (the report's
        header), never part of what it computes."""
        run = self.client.get_run(self.run_id)
        parent_id = run.data.tags.get("mlflow.parentRunId", "")
        top = self.client.get_run(parent_id) if parent_id else run
        return RunFacts(self.tracking_uri, run.info.experiment_id, self.run_id, parent_id,
                        top.info.start_time / 1000.0, dict(top.data.tags))

    def nested_runs(self) -> NestedRuns:
        """A picklable factory of runs nested under this one (e.g. one per Tune trial)."""
        experiment_id = self.client.get_run(self.run_id).info.experiment_id
        return NestedRuns(self.tracking_uri, experiment_id, self.run_id, self.needs_credentials)

    def end(self, status: str = "FINISHED") -> None:
        _retry_locked(lambda: self.client.set_terminated(self.run_id, status=status))


@dataclass(frozen=True)
class NestedRuns:
    """Creates MLflow runs under ``parent_run_id`` from any process (picklable)."""

    tracking_uri: str
    experiment_id: str
    parent_run_id: str
    needs_credentials: bool = False

    def start(self, name: str, tags: dict[str, Any]) -> RunLogger:
        check_worker_credentials(self.tracking_uri, self.needs_credentials)
        client = MlflowClient(tracking_uri=self.tracking_uri)
        all_tags = {**{k: redact(str(v)) for k, v in tags.items()}, "mlflow.parentRunId": self.parent_run_id}
        run = _retry_locked(lambda: client.create_run(self.experiment_id, run_name=name, tags=all_tags))
        return RunLogger(self.tracking_uri, run.info.run_id, self.needs_credentials)


class MetricBuffer:
    """Per-step metrics of a long loop, kept in memory and sent in one ``log_batch``:
    ``add`` costs nothing; ``flush`` sends (the loop flushes at every checkpoint and
    at the end, and ``add`` flushes once ``flush_seconds`` have passed, so curves stay
    live). Names are prefixed with ``prefix`` (e.g. ``"tsdae_ae."``)."""

    def __init__(self, logger: RunLogger, prefix: str = "", flush_seconds: float = 30.0) -> None:
        self.logger, self.prefix, self.flush_seconds = logger, prefix, flush_seconds
        self.pending: list[Metric] = []
        self.last_flush = time.time()

    def add(self, metrics: dict[str, float], step: int) -> None:
        now = time.time()
        self.logger.log_sample_sizes({f"{self.prefix}{k}": v for k, v in metrics.items() if is_sample_size(k)})
        self.pending += [Metric(f"{self.prefix}{k}", float(v), int(now * 1000), step) for k, v in metrics.items()
                         if not is_sample_size(k)]
        if now - self.last_flush >= self.flush_seconds:
            self.flush()

    def flush(self) -> None:
        if self.pending:
            self.logger.log_metric_entities(self.pending)
        self.pending, self.last_flush = [], time.time()


class DeletedExperiment(ValueError):
    """The configured experiment name belongs to a deleted MLflow experiment."""


class Tracker:
    """Creates the experiment and the runs of one pipeline invocation (driver side).
    ``tracking_uri`` may carry ``user:password@``: it moves into MLflow's credential
    variables and `tracking_uri` is the URI without it."""

    def __init__(self, tracking_uri: str, experiment: str, artifact_location: str) -> None:
        self.tracking_uri = tracking_uri = use_credentials(tracking_uri)
        db = sqlite_file(tracking_uri)
        self.needs_credentials = has_credentials() and db is None
        lock = None
        if db is not None:
            db.parent.mkdir(parents=True, exist_ok=True)
            lock = setup_lock(db)
            lock.acquire(on_wait=lambda who: log.warning("MLflow store %s: waiting for %s, which holds %s (creating "
                                                         "or migrating the store)", db, who, lock.path),
                         timeout=wait_bound(TRACKER_LOCK_WAIT_S))
        try:
            self.client = MlflowClient(tracking_uri=tracking_uri)
            found = self.client.get_experiment_by_name(experiment)
            if db is not None:
                _use_wal(db)
            if found is None:
                # an explicit location: the default (./mlruns of the cwd) would land in a
                # Ray job's temporary working dir and vanish
                self.experiment_id = self.client.create_experiment(
                    experiment, artifact_location=artifact_location
                )
            elif found.lifecycle_stage == "deleted":
                raise DeletedExperiment(deleted_message(experiment, found.experiment_id, tracking_uri))
            else:
                self.experiment_id = found.experiment_id
                moved_from = found.artifact_location
                if db is not None and moved_from != artifact_location and _beside(db, artifact_location):
                    _follow_root(db, self.experiment_id, moved_from, artifact_location)
                    log.info("MLflow artifact location of %r follows the artifact root: %s -> %s",
                             experiment, moved_from, artifact_location)
        finally:
            if lock is not None:
                lock.release()
        # the UI's own "Machine learning" experiment type. MLflow 3.17's UI no longer reads
        # it for its GenAI / classic choice (the URL's workflowType does: the links the
        # pipeline prints carry it, pipelines.cli.mlflow_run_url); kept for the UIs that do
        self.client.set_experiment_tag(self.experiment_id, EXPERIMENT_KIND_TAG, EXPERIMENT_KIND)

    def start_run(self, name: str, tags: dict[str, Any], parent: str | None = None) -> RunLogger:
        all_tags = {k: redact(str(v)) for k, v in tags.items()}
        if parent:
            all_tags["mlflow.parentRunId"] = parent
        run = _retry_locked(lambda: self.client.create_run(self.experiment_id, run_name=name, tags=all_tags))
        return RunLogger(self.tracking_uri, run.info.run_id, self.needs_credentials)


def deleted_message(experiment: str, experiment_id: str, tracking_uri: str) -> str:
    """What to do about a deleted experiment of the configured name: restore it, or pick
    another name (MLflow keeps a deleted experiment's name taken until it is purged)."""
    creds = " (with MLFLOW_TRACKING_USERNAME / MLFLOW_TRACKING_PASSWORD set)" if has_credentials() else ""
    return (f"run.experiment: the MLflow experiment {experiment!r} (id {experiment_id}) at {shown(tracking_uri)} "
            f"is deleted. Restore it{creds}:\n  MLFLOW_TRACKING_URI={shown(tracking_uri)} mlflow experiments restore "
            f"--experiment-id {experiment_id}\nor log to another experiment: run.experiment=NEW_NAME")


def _use_wal(db: Path) -> None:
    """Persistently switch the database to write-ahead logging (a no-op once it is)."""
    with sqlite3.connect(db, timeout=30) as conn:
        conn.execute("PRAGMA journal_mode=WAL")


def _beside(db: Path, artifact_location: str) -> bool:
    """True for the default layout: the database and the artifacts in one artifact root."""
    return Path(artifact_location).parent == db.parent


def _follow_root(db: Path, experiment_id: str, old: str, new: str) -> None:
    """Point the experiment, its runs and its logged models at ``new`` instead of ``old``
    (the database was copied or moved along with its artifact root)."""
    with sqlite3.connect(db, timeout=30) as conn:
        conn.execute("UPDATE experiments SET artifact_location = ? WHERE experiment_id = ?",
                     (new, int(experiment_id)))
        for table, column in (("runs", "artifact_uri"), ("logged_models", "artifact_location")):
            conn.execute(
                f"UPDATE {table} SET {column} = ? || substr({column}, ?) "
                f"WHERE experiment_id = ? AND substr({column}, 1, ?) = ?",
                (new, len(old) + 1, int(experiment_id), len(old), old),
            )


def git_commit(repo: Path) -> str:
    """The commit of the code being run (``+dirty`` if the tree has uncommitted changes).

    $NUGGET_GIT_COMMIT wins: `make run` sets it for Ray jobs, whose uploaded working
    directory has no ``.git``.
    """
    if os.environ.get("NUGGET_GIT_COMMIT"):
        return os.environ["NUGGET_GIT_COMMIT"]
    try:
        head = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=repo, capture_output=True, text=True, check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + ("+dirty" if dirty else "")
