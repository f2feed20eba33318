"""Execute a plan on Ray: independent stages run concurrently, hits are only recorded.

Driver side (:func:`execute`): creates the MLflow parent run, submits each miss as a Ray
task once its upstream stages are done, and records hits (with the metrics and producing
run of the cached output). A stage's child run is created when the stage starts or is
found cached, so its MLflow duration is the stage's; a stage never started because an
upstream stage failed gets its run at the end, status KILLED, tagged ``skipped_because``.
Each start and finish is one log line ``[k/N elapsed eta ...]`` (`stages.framework.eta`). Worker side
(`stages.framework.worker.run_one`): materialises inputs, runs the stage into scratch, publishes it.
A failing stage marks its run FAILED and leaves no completed output; stages already
running finish (their outputs are valid cache entries), nothing new starts, and
:class:`PipelineError` names every failed stage.

Scheduling: each stage to run declares its demand (``Stage.demand``: its task plus the
Ray Train workers / Tune trials / Ray Data fan-out it starts). The driver keeps a
:class:`~stages.framework.resources.Ledger` of the cluster's resources minus the demands
of running stages and submits a ready stage only when its whole demand is free, so no
worker group waits for CPUs that another stage holds. Ready stages are tried in
decreasing order of their critical path (:func:`~stages.framework.dag.critical_path`,
durations measured by earlier runs of the same profile and precision in the store, else ``Stage.expected()``,
the stage table's: `stages.framework.estimates`);
a smaller one that fits starts beside a running big one. The first ready stage that does
not fit reserves the resources of the running stages expected to end first; a stage
behind it starts only if it is expected to end by then or fits beside the reservation
(EASY backfilling), so a wide stage (the sweep) is not starved by a stream of narrow ones. A demand larger than the whole
cluster fails before any stage starts, naming the config field to lower.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from stages.common import device_guard_switch, in_process_switch
from stages.common.progress import fmt_duration
from stages.config.loader import to_yaml
from stages.config.schema import PipelineConfig
from stages.framework import locks, private_ray, quiet
from stages.framework.dag import PlannedStage, critical_path
from stages.framework.devices import task_options, with_device
from stages.framework.estimates import label, profile_label, stage_precision
from stages.framework.estimates import past_seconds as estimated_past
from stages.framework.eta import StageProgress
from stages.framework.keys import stage_config, stage_sections
from stages.framework.orphans import DRIVER_TAG, Heartbeat, driver_identity
from stages.framework.resources import Demand, DemandError, Ledger, check_fits, cluster_capacity
from stages.framework.resources import fmt_amounts as _fmt
from stages.framework.shutdown import (
    abandon,
    clean_up_after_crashes,
    raise_if_stopped,
    sigterm_as_exit,
)
from stages.framework.stage import Stage
from stages.framework.store import ArtifactStore
from stages.framework.tracking import RunLogger, Tracker, git_commit, is_sample_size, table_columns
from stages.framework.worker import record_cached, run_one

log = logging.getLogger("nugget.pipeline")
_WAIT_STEP_S = 1.0  # the scheduling loop's wait for a stage, between checks of a lost SIGTERM
REPO = Path(__file__).resolve().parents[2]
DRIVER = driver_identity()  # tagged on every run this process creates (stages.framework.orphans)


class PipelineError(RuntimeError):
    """One or more stages failed; the message names them and where their errors are."""


@dataclass
class StageOutcome:
    name: str
    key: str
    status: str  # hit | ran | failed | skipped
    uri: str = ""
    seconds: float = 0.0
    run_id: str = ""
    error: str = ""


@dataclass
class PipelineResult:
    parent_run_id: str
    tracking_uri: str
    experiment_id: str = ""
    outcomes: list[StageOutcome] = field(default_factory=list)


def _ray_job_ids() -> dict[str, str]:
    import ray

    if not ray.is_initialized():  # a fully cached plan never starts Ray
        return {"ray_job_id": "none"}
    ids = {"ray_job_id": ray.get_runtime_context().get_job_id()}
    raw = os.environ.get("RAY_JOB_CONFIG_JSON_ENV_VAR")
    if raw:
        submission = json.loads(raw).get("metadata", {}).get("job_submission_id")
        if submission:
            ids["ray_submission_id"] = submission
    return ids


def parent_description(cfg: PipelineConfig, entry: str, plan: list[PlannedStage], commit: str,
                       store: ArtifactStore) -> str:
    """The parent run's description (MLflow's ``mlflow.note.content``, shown on the run's
    page): what ran, on which code, and where its report is."""
    targets = ", ".join(cfg.run.targets) if cfg.run.targets else "the whole DAG"
    report = next((p for p in plan if p.name == "report"), None)
    where = (f"report: `{store.uri(report.name, report.key)}`" if report is not None
             else f"artifacts: `{store.root_uri}`")
    return (f"`{entry}`, profile `{cfg.profile}`, targets: {targets} ({len(plan)} stages), "
            f"commit `{commit}`.\n\n{where}")


def _start_parent(tracker: Tracker, cfg: PipelineConfig, entry: str, plan: list[PlannedStage],
                  store: ArtifactStore) -> RunLogger:
    cfg_yaml = to_yaml(cfg)
    commit = git_commit(REPO)
    tags = {
        "entry": entry,
        "profile": cfg.profile,
        "git_commit": commit,
        "config_hash": hashlib.sha256(cfg_yaml.encode()).hexdigest()[:16],
        "stages": ",".join(p.name for p in plan),
        "mlflow.note.content": parent_description(cfg, entry, plan, commit, store),
        DRIVER_TAG: DRIVER,
        **_ray_job_ids(),
    }
    parent = tracker.start_run(f"{entry}:{cfg.profile}", tags)
    from omegaconf import OmegaConf

    params = OmegaConf.to_container(OmegaConf.structured(cfg))
    assert isinstance(params, dict)  # a structured config converts to a mapping
    # the run's own settings and the scalars at the top (profile, rehearsal): a short set the
    # runs table can show; every section is in config.yaml and in its stages' runs
    parent.log_params({str(k): v for k, v in params.items() if k == "run" or not isinstance(v, dict)})
    parent.log_text(cfg_yaml, "config.yaml")
    return parent


def _child_tags(p: PlannedStage, store: ArtifactStore) -> dict[str, Any]:
    return {
        DRIVER_TAG: DRIVER,
        "stage": p.name,
        "cache_key": p.key,
        "cache_hit": str(not p.will_run).lower(),
        "forced": str(p.forced).lower(),
        "artifact_uri": store.uri(p.name, p.key),
        "upstream_keys": json.dumps(p.upstream_keys, sort_keys=True),
        # what the output was made under, one tag per library (`stages.framework.environment`)
        **({f"env.{name}": version for name, version in p.parts.environment.items()} if p.parts else {}),
        **({"code_version": p.parts.code} if p.parts else {}),
        **({"code_change_accepted": p.pin.line()} if p.pin else {}),
    }


def _record_hit(p: PlannedStage, child: RunLogger, store: ArtifactStore) -> tuple[StageOutcome, dict[str, float]]:
    """Record a cached stage in its run; (its outcome, the metrics of the cached output)."""
    metrics = record_cached(store, p.name, p.key, child, {})
    return StageOutcome(p.name, p.key, "hit", store.uri(p.name, p.key), 0.0, child.run_id), metrics


def _open_child(tracker: Tracker, cfg: PipelineConfig, p: PlannedStage, store: ArtifactStore,
                parent: RunLogger) -> RunLogger:
    """The stage's child run, created now (its start time is the stage's), named with its
    key parameters (`Stage.run_name`), its config section as params."""
    child = tracker.start_run(p.stage.run_name(stage_sections(p.stage, cfg)), _child_tags(p, store),
                              parent=parent.run_id)
    child.log_params(stage_config(p.stage, cfg))
    return child


def _to_parent(p: PlannedStage, parent: RunLogger, metrics: dict[str, float], store: ArtifactStore) -> None:
    """Headline numbers: a stage with ``parent_metrics`` has its metrics copied to the parent
    (the sample sizes only into the table ``<stage>/metrics.json`` beside them, one row per
    metric with its n), and each of its ``parent_tables`` logged there as an MLflow table."""
    if p.stage.parent_metrics and metrics:
        parent.log_metrics({k: v for k, v in metrics.items() if not is_sample_size(k)})
        parent.log_table(table_columns(metric_rows(metrics)), f"{p.name}/metrics.json")
    if p.stage.parent_tables:
        artifact = store.artifact(p.name, p.key)
        for name in p.stage.parent_tables:
            rows = json.loads(artifact.file(name).read_text())
            if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
                raise PipelineError(f"stage {p.name!r}: parent_tables file {name!r} must hold a list of "
                                    f"flat objects, found {type(rows).__name__}")
            parent.log_table(table_columns(rows), f"{p.name}/{name}")


def metric_rows(metrics: dict[str, float]) -> list[dict[str, Any]]:
    """One row per metric (not per sample size): ``metric``, ``value`` and its ``n`` (the
    ``<name>_n`` or ``<name>/n`` beside it, None without one)."""
    return [{"metric": k, "value": v, "n": metrics.get(f"{k}_n", metrics.get(f"{k}/n"))}
            for k, v in sorted(metrics.items()) if not is_sample_size(k)]



def stage_demands(cfg: PipelineConfig, plan: list[PlannedStage], capacity: dict[str, float]) -> dict[str, Demand]:
    """The demand of every stage of ``plan`` that will run, from its config sections (and
    the GPU of its own task under ``run.device``, `stages.framework.devices`)."""
    return {p.name: with_device(p.stage.demand(stage_sections(p.stage, cfg)), p.stage, cfg.run.device, capacity)
            for p in plan if p.will_run}


def stage_labels(cfg: PipelineConfig, stages: list[type[Stage]]) -> dict[str, str]:
    """Each stage's estimate label in this run (`stages.framework.estimates.label`): the profile
    and the precision the stage computes in."""
    profile = profile_label(cfg.profile, cfg.rehearsal)
    return {s.name: label(profile, stage_precision(stage_config(s, cfg))) for s in stages}


def past_seconds(store: ArtifactStore, labels: dict[str, str]) -> dict[str, float]:
    """Per stage of ``labels``, the duration its latest completed output in ``store`` took under
    the same profile and precision (any key): the scheduler's estimate where an earlier run
    measured one (`stages.framework.estimates`)."""
    manifests: dict[str, list[dict[str, Any]]] = {}
    for name in labels:
        try:
            manifests[name] = store.manifests(name)
        except (OSError, ValueError):
            continue
    return estimated_past(manifests, labels)


def _fail(p: PlannedStage, child: RunLogger, text: str, result: PipelineResult, prefix: str) -> StageOutcome:
    child.set_tags({"error": text.strip().splitlines()[-1][:500]})
    # the config a failure can come from: the sections the stage reads (its cache key's)
    text = f"{text.rstrip()}\n(stage {p.name} reads config: {', '.join(p.stage.config_keys) or 'none'})\n"
    child.log_text(text, "error.txt")
    child.end("FAILED")
    outcome = StageOutcome(p.name, p.key, "failed", run_id=child.run_id, error=text)
    result.outcomes.append(outcome)
    log.error("%s %-22s FAILED key=%s\n%s", prefix, p.name, p.key, text)
    return outcome


def _skip(waiting: list[PlannedStage], failed: list[StageOutcome], tracker: Tracker, cfg: PipelineConfig,
          store: ArtifactStore, parent: RunLogger, result: PipelineResult, progress: StageProgress) -> None:
    """Stages never started because a stage failed: each gets its run now, status KILLED,
    tagged with the failed stage(s) that stopped it."""
    names = ", ".join(o.name for o in failed)
    for p in waiting:
        child = _open_child(tracker, cfg, p, store, parent)
        child.set_tags({"skipped_because": f"upstream failure: {names}"})
        child.end("KILLED")
        result.outcomes.append(StageOutcome(p.name, p.key, "skipped", run_id=child.run_id))
        progress.ended(p.name, None)
        log.info("%s %-22s skipped: upstream failure: %s", progress.prefix(), p.name, names)


def execute(
    cfg: PipelineConfig,
    plan: list[PlannedStage],
    store: ArtifactStore,
    tracker: Tracker,
    entry: str,
) -> PipelineResult:
    """Run every miss of ``plan`` on Ray (initialised by the caller whenever the plan
    has a stage to run), record every hit."""
    capacity = cluster_capacity() if any(p.will_run for p in plan) else {}
    demands = stage_demands(cfg, plan, capacity)
    ledger = Ledger(capacity)
    try:
        for name, demand in demands.items():
            check_fits(name, demand, ledger.capacity)
    except DemandError as exc:
        raise PipelineError(f"{exc}; no stage was started") from None
    labels = stage_labels(cfg, [p.stage for p in plan])
    estimate = {p.name: p.stage.expected(cfg.profile, stage_precision(stage_config(p.stage, cfg))) for p in plan}
    estimate.update(past_seconds(store, {name: labels[name] for name in demands}))
    priority = critical_path(plan, estimate)
    if demands:
        log.log(quiet.chatter_level(), "scheduler: cluster %s; critical path (s): %s", _fmt({k: ledger.capacity.get(k, 0.0) for k in ("CPU", "GPU")}),
                 ", ".join(f"{n}={priority[n]:g}" for n in sorted(demands, key=lambda n: -priority[n])))

    clean_up_after_crashes(tracker, store, plan)
    parent = _start_parent(tracker, cfg, entry, plan, store)
    result = PipelineResult(parent.run_id, tracker.tracking_uri, tracker.experiment_id)
    children: dict[str, RunLogger] = {}
    running: dict[Any, PlannedStage] = {}
    heartbeat = Heartbeat(parent)
    try:
        with sigterm_as_exit():
            _schedule(cfg, plan, store, tracker, parent, result, children, running, demands, ledger,
                      estimate, priority)
            raise_if_stopped()
    except BaseException as exc:  # the driver itself stopped: end its runs, stop its tasks
        abandon(exc, parent, children, running, {o.name for o in result.outcomes})
        raise
    finally:
        heartbeat.stop()
    failed = [o for o in result.outcomes if o.status == "failed"]
    parent.end("FAILED" if failed else "FINISHED")
    if failed:
        names = ", ".join(o.name for o in failed)
        details = "\n".join(f"--- {o.name} (MLflow run {o.run_id}):\n{o.error}" for o in failed)
        raise PipelineError(f"stage(s) failed: {names}; no output was published for them\n{details}")
    return result


def _schedule(cfg: PipelineConfig, plan: list[PlannedStage], store: ArtifactStore, tracker: Tracker,
              parent: RunLogger, result: PipelineResult, children: dict[str, RunLogger],
              running: dict[Any, PlannedStage], demands: dict[str, Demand], ledger: Ledger,
              estimate: dict[str, float], priority: dict[str, float]) -> None:
    """The scheduling loop of `execute` (see the module docstring); fills ``result``."""
    import ray

    order = {p.name: i for i, p in enumerate(plan)}
    progress = StageProgress(plan, estimate, priority, ledger.capacity.get("CPU", 1.0))
    task_env = {"runtime_env": {"env_vars": {**quiet.runtime_env_vars(quiet.is_verbose()),
                                             **private_ray.runtime_env_vars(),
                                             **device_guard_switch.runtime_env_vars(),
                                             **in_process_switch.runtime_env_vars(),
                                             **locks.wait_env_vars()}}}
    planned = {p.name for p in plan}
    # upstream stages outside the plan (a single-stage rerun) were verified complete
    done: set[str] = {u for p in plan for u in p.upstream_keys if u not in planned}
    failed: list[StageOutcome] = []
    waiting = list(plan)
    remote = ray.remote(run_one)
    told_waiting: set[tuple[str, str]] = set()  # (stage, reason): each wait line once
    while waiting or running:
        ready = [w for w in waiting if all(u in done for u in w.upstream_keys)]
        hits = [w for w in ready if not w.will_run and not failed]
        if hits:  # record them first: the stages they unblock may start in this pass
            for p in hits:
                waiting.remove(p)
                children[p.name] = _open_child(tracker, cfg, p, store, parent)
                outcome, metrics = _record_hit(p, children[p.name], store)
                _to_parent(p, parent, metrics, store)
                result.outcomes.append(outcome)
                done.add(p.name)
                progress.ended(p.name, None)
                log.info("%s %-22s cached key=%s", progress.prefix(), p.name, p.key)
            continue
        reservation = None  # for the first ready stage that does not fit (EASY backfilling)
        now = time.time()
        for p in sorted(ready, key=lambda w: (-priority[w.name], order[w.name])):
            if failed:
                waiting.remove(p)
                continue
            demand = demands[p.name]
            if not ledger.fits(demand):
                if not running:  # the idle cluster cannot host it (check_fits let it pass)
                    waiting.remove(p)
                    text = (f"stage {p.name!r} needs {_fmt(ledger.resolve(demand))} but the idle cluster "
                            f"has {_fmt({k: ledger.capacity.get(k, 0.0) for k in demand})}; "
                            f"lower {demand.lower or 'its resources'}")
                    children[p.name] = _open_child(tracker, cfg, p, store, parent)
                    progress.ended(p.name, None)
                    failed.append(_fail(p, children[p.name], text, result, progress.prefix()))
                else:
                    if reservation is None:
                        reservation = ledger.reserve(p.name, demand, now)
                    if (p.name, "resources") not in told_waiting:
                        told_waiting.add((p.name, "resources"))
                        free = ledger.free()
                        log.log(quiet.chatter_level(), "%s %-22s waits: needs %s, free %s", progress.prefix(), p.name,
                                 _fmt(ledger.resolve(demand)), _fmt({k: free.get(k, 0.0) for k in demand}))
                continue
            if reservation is not None and not ledger.may_backfill(demand, estimate[p.name], now, reservation):
                if (p.name, reservation.stage) not in told_waiting:
                    told_waiting.add((p.name, reservation.stage))
                    log.log(quiet.chatter_level(), "%s %-22s waits: fits, but would delay %s (longer path)",
                            progress.prefix(), p.name, reservation.stage)
                continue
            waiting.remove(p)
            ledger.take(p.name, demand, now + estimate[p.name])
            children[p.name] = _open_child(tracker, cfg, p, store, parent)
            progress.began(p.name)
            log.info("%s %-22s start  %s key=%s (holds %s)", progress.prefix(), p.name, p.status, p.key,
                     _fmt(ledger.held[p.name]))
            options = {**task_options(p.stage, cfg.run.device, ledger.capacity), **task_env}
            ref = remote.options(name=f"stage:{p.name}", **options).remote(
                p.stage, cfg, p.key, p.upstream_keys, children[p.name], p.forced,
                p.parts.record() if p.parts else {}
            )
            running[ref] = p
        if not running:
            if waiting and failed:
                _skip(waiting, failed, tracker, cfg, store, parent, result, progress)
                waiting.clear()
            continue
        finished: list[Any] = []
        while not finished:  # in steps, so a SIGTERM whose SystemExit was lost still stops the loop
            raise_if_stopped()
            finished, _ = ray.wait(list(running), num_returns=1, timeout=_WAIT_STEP_S)
        p = running.pop(finished[0])
        ledger.release(p.name)
        child = children[p.name]
        try:
            out = ray.get(finished[0])
        except Exception as exc:  # the stage's own error, wrapped by Ray
            text = "".join(traceback.format_exception_only(type(exc), exc))
            progress.ended(p.name, None)
            failed.append(_fail(p, child, text, result, progress.prefix()))
            continue
        _to_parent(p, parent, out["metrics"], store)
        done.add(p.name)
        status = "hit" if out["reused"] else "ran"  # reused: a concurrent invocation computed it
        result.outcomes.append(StageOutcome(p.name, p.key, status, out["uri"], out["seconds"], child.run_id))
        progress.ended(p.name, out["seconds"])
        if out["reused"]:
            log.info("%s %-22s reused the output a concurrent run published -> %s", progress.prefix(),
                     p.name, out["uri"])
        else:
            log.info("%s %-22s done   in %s -> %s", progress.prefix(), p.name, fmt_duration(out["seconds"]),
                     out["uri"])
