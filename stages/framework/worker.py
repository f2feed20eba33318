"""One stage inside its Ray task (:func:`run_one`): locks, inputs, scratch, publish.

The driver side is `stages.framework.executor`; this module is what each stage task runs.
It holds the key's compute lock throughout and the read lock of each input
(`stages.framework.locks`), reads the inputs (checked against their checksums), runs the
stage into scratch, publishes it, and ends the stage's MLflow run itself.
"""

from __future__ import annotations

import logging
import os
import socket
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from stages.config.schema import PipelineConfig
from stages.framework import quiet, sigterm
from stages.framework.code_identity import code_version
from stages.framework.devices import task_device
from stages.framework.environment import environment_problems
from stages.framework.estimates import profile_label
from stages.framework.keys import stage_config, stage_sections
from stages.framework.locks import wait_bound
from stages.framework.stage import Stage, StageContext
from stages.framework.store import ArtifactStore
from stages.framework.tracking import RunLogger

log = logging.getLogger("nugget.pipeline")
# bounds of this task's lock waits ($NUGGET_LOCK_WAIT_S overrides both): the compute lock is
# held by another invocation computing the same key, which may be a training of hours; a
# replace holds an input's read lock only for its renames
COMPUTE_WAIT_S, REPLACE_WAIT_S = 86400.0, 600.0


class EnvironmentDrift(RuntimeError):
    """The task's library versions differ from those the stage's key was planned with."""


def run_one(
    stage_cls: type[Stage],
    cfg: PipelineConfig,
    key: str,
    upstream_keys: dict[str, str],
    logger: RunLogger,
    forced: bool,
    key_parts: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Run one stage into scratch and publish it (executes inside a Ray task).

    Holds the compute lock of (stage, key) throughout (`stages.framework.locks`): a
    concurrent invocation that computed it first wins, and this one returns that output
    (``reused``) instead of computing it again. Holds the read lock of each input while the
    stage runs, so a forced replace elsewhere waits. Ends the stage's run FINISHED itself
    once the output is published, so a run whose driver died never outlives its output
    as RUNNING. ``key_parts``: what the driver computed ``key`` from (recorded in the
    manifest); a task whose library versions differ from its ``environment`` refuses to run."""
    # the executor always passes the parts `Dag.plan` computed; a direct call (tests) may not
    key_parts = key_parts or {}
    drift = environment_problems(stage_cls, key_parts["environment"]) if "environment" in key_parts else []
    if drift:
        raise EnvironmentDrift(
            f"stage {stage_cls.name} would run on {socket.gethostname()} under other library versions than its "
            f"cache key (key {key}) was planned with: {'; '.join(drift)}. Install the same locked environment "
            "on every node (make install), or plan from a node that has this one")
    # Ray workers start with an unconfigured root logger: stage progress lines would vanish
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    quiet.apply()  # before the stage imports ray.data / transformers (NUGGET_VERBOSE decides)
    sigterm.install()  # a stop request landing in a finaliser exits without a traceback
    stage_name = stage_cls.name
    store = ArtifactStore(cfg.run.artifact_root)
    with ExitStack() as held:
        lock = store.lock(stage_name, key)
        lock.acquire(on_wait=lambda who: log.info("%s waits for key %s: computed by %s (%s)", stage_name, key, who,
                                                  lock.path),
                     timeout=wait_bound(COMPUTE_WAIT_S))
        held.callback(lock.release)
        if not forced and store.is_complete(stage_name, key):
            return _reuse(store, stage_name, key, logger)
        for u, k in upstream_keys.items():
            reading = store.read_lock(u, k)
            if reading is not None:
                def replaced(who: str, u: str = u) -> None:
                    log.info("%s waits: %s is being replaced by %s", stage_name, u, who)

                reading.acquire(on_wait=replaced, timeout=wait_bound(REPLACE_WAIT_S))
                held.callback(reading.release)
        inputs = {u: store.artifact(u, k) for u, k in upstream_keys.items()}
        scratch = store.scratch(stage_name, key)
        ctx = StageContext(
            stage=stage_name,
            key=key,
            config=stage_sections(stage_cls, cfg),
            inputs=inputs,
            output_dir=scratch,
            logger=logger,
            sources_dir=Path(os.path.expanduser(cfg.run.sources_dir)),
            work_uri=store.work_uri(stage_name, key),
            forced=forced,
            device=task_device(stage_cls, cfg.run.device, _granted_gpus()),
        )
        start = time.time()
        try:
            from stages.common import device_guard  # torch: only where a stage runs

            with device_guard.from_env():  # NUGGET_DEVICE_GUARD=1: every tensor on a declared device
                stage_cls().run(ctx)
            stage_cls.check_output(ctx)  # an output that breaks its own contract is never published
            seconds = time.time() - start
            manifest = {
                "stage": stage_name,
                "key": key,
                "run_id": logger.run_id,
                "upstream": upstream_keys,
                "config": stage_config(stage_cls, cfg),
                "key_parts": key_parts,
                "code_ran": code_version(stage_cls),  # differs from key_parts' code under an accepted change
                "metrics": ctx.metrics,
                "seconds": seconds,
                "finished_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                # what the scheduler's estimate of a later run compares (stages.framework.estimates)
                "profile": profile_label(cfg.profile, cfg.rehearsal),
                "forced": forced,
            }
            uri = store.publish(stage_name, key, scratch, manifest)
        except BaseException:
            store.discard(scratch)
            raise  # the work space stays: the next attempt resumes from it
        store.drop_work(stage_name, key)
    logger.log_metrics({"stage_seconds": seconds})
    logger.end("FINISHED")
    return {"uri": uri, "seconds": seconds, "metrics": ctx.metrics, "reused": False}


def record_cached(store: ArtifactStore, stage: str, key: str, logger: RunLogger,
                  tags: dict[str, str]) -> dict[str, float]:
    """End ``logger``'s run FINISHED as the record of an output already in the store (its
    producing run, its metrics, ``tags``); returns those metrics."""
    manifest = store.manifest(stage, key)
    logger.set_tags({**tags, "produced_by_run_id": manifest.get("run_id", "unknown")})
    metrics = manifest.get("metrics") or {}
    if metrics:
        logger.log_metrics(metrics)
    logger.end("FINISHED")
    return metrics


def _reuse(store: ArtifactStore, stage: str, key: str, logger: RunLogger) -> dict[str, Any]:
    """The output a concurrent invocation published while this one waited for the lock."""
    metrics = record_cached(store, stage, key, logger, {"cache_hit": "true", "reused_concurrent_output": "true"})
    return {"uri": store.uri(stage, key), "seconds": 0.0, "metrics": metrics, "reused": True}


def _granted_gpus() -> list[Any]:
    """The GPUs Ray granted the current task (none outside a Ray task)."""
    import ray

    return list(ray.get_gpu_ids()) if ray.is_initialized() else []
