"""Build and fit a ``TorchTrainer`` for a task; used by training stages and Tune trials. A job of
one CPU worker on ddp trains in the calling process instead, with the same checkpoints, resume
and retries (`stages.training.session`).

Ray Train storage (checkpoints of this fit) lives beside the stage's artifacts under
``<artifact_root>/<stage>/.train-<key>/`` so every node of a cluster reaches it; it is
deleted once the final model is exported. Reports are synchronised across workers, so
the health-check interval is shortened (the default adds a wait to every report: docs/environment-notes.md).

The executor starts a training stage only when its workers' CPUs / GPUs are free
(``Stage.demand``), so the worker group's placement group is granted at once. Should it
still have to wait (Ray Data tasks of a stage started outside the pipeline, a node
joining an autoscaling cluster), Ray Train waits instead of failing after its default
60 s and restarting the group: ``RAY_TRAIN_WORKER_GROUP_START_TIMEOUT_S`` defaults to
:data:`WORKER_GROUP_START_TIMEOUT_S` here.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from stages.artifacts.trainer_state import InputUse
from stages.framework import quiet
from stages.framework.resources import cluster_capacity, shortfall, worker_demand
from stages.training.input_use import input_use_metrics
from stages.training.loop import PROBE_FILE, STATE_FILE, train_loop_per_worker
from stages.training.model_card import document_models
from stages.training.ray_trainer import torch_trainer
from stages.training.sequence import DONE, finished_uri, train_sequence_per_worker
from stages.training.session import in_process, run_in_process
from stages.training.storage import clear_storage, exists
from stages.training.task import example_length_of

if TYPE_CHECKING:
    from stages.config.job import TrainJob
    from stages.config.schema import CausalLM
    from stages.framework.stage import StageContext
    from stages.framework.tracking import RunLogger
    from stages.training.task import TrainingTask

WORKER_GROUP_START_TIMEOUT_S = "86400"  # wait for the placement group, never time out and retry


def check_resources(job: TrainJob, section: str) -> None:
    """Fail before training when the cluster cannot host the worker group (the same test
    as the executor's ``check_fits`` before a pipeline starts; kept for direct callers)."""
    need = worker_demand(job.num_workers, job.use_gpu)
    have = cluster_capacity()
    for resource, amount in shortfall(need, have).items():
        unit = "CPUs" if resource == "CPU" else f"{resource}s with use_gpu"
        raise ValueError(
            f"{section}.num_workers={job.num_workers} needs {amount:g} {unit} but the Ray "
            f"cluster has {have.get(resource, 0):g}; lower {section}.num_workers"
        )


def check_task(task: TrainingTask, job: TrainJob) -> None:
    """Fail before a fit starts when ``job`` asks of ``task`` what it cannot do."""
    if getattr(job, "group_by_length", False):
        example_length_of(task)


def _run(train_fn: Callable[[dict[str, Any]], None], loop_config: dict[str, Any], job: TrainJob, storage: str,
         name: str) -> Any:
    """One fit of ``train_fn`` with ``job``'s workers; its `Result`: a ``TorchTrainer`` worker group,
    or for one CPU worker on ddp this process (`stages.training.session.run_in_process`)."""
    if in_process(job):
        return run_in_process(train_fn, loop_config, job, f"{storage}/{name}")
    import ray.train

    from stages.training.process_group import NodeBoundTorchConfig

    os.environ.setdefault("RAY_TRAIN_HEALTH_CHECK_INTERVAL_S", "0.2")
    os.environ.setdefault("RAY_TRAIN_WORKER_GROUP_START_TIMEOUT_S", WORKER_GROUP_START_TIMEOUT_S)
    trainer = torch_trainer(
        train_fn,
        train_loop_config=loop_config,
        # its listeners on the node address only, not on every interface
        torch_config=NodeBoundTorchConfig(backend="nccl" if job.use_gpu else "gloo"),
        scaling_config=ray.train.ScalingConfig(num_workers=job.num_workers, use_gpu=job.use_gpu),
        run_config=ray.train.RunConfig(
            name=name,
            storage_path=storage,
            failure_config=ray.train.FailureConfig(max_failures=job.max_failures),
            checkpoint_config=ray.train.CheckpointConfig(num_to_keep=2),
            # Ray Train configures its controller's and workers' loggers itself: its
            # per-report INFO lines (Reporting training result, Checkpoint successfully
            # created, the TrainController lines) only with --verbose. The ignore: ray.train
            # binds Train V2's RunConfig (which has logging_config) only at run time, when V2
            # is enabled (the default, which the pipeline needs); a type checker sees V1's.
            logging_config=ray.train.LoggingConfig(log_level=quiet.train_log_level()),  # type: ignore[call-arg]
        ),
    )
    return trainer.fit()


def fit(
    task: TrainingTask,
    job: TrainJob,
    storage: str,
    name: str,
    seed: int,
    logger: RunLogger | None = None,
    fail_at_step: int = 0,
    *,
    download_to: str | Path,
    metric_prefix: str = "",
) -> tuple[Path, dict[str, Any]]:
    """Train; returns (``download_to``, now holding the final checkpoint, trainer state dict).

    The caller owns ``download_to`` (Ray's own default, a fresh ``/tmp/checkpoint_tmp_*``
    per call, is never removed). ``fail_at_step`` injects one worker failure on a fresh
    start (tests of restarts). ``logger`` (a `RunLogger`, or None) receives rank 0's
    metrics, named as :mod:`stages.training.loop` documents, under ``<metric_prefix>.`` if set.
    """
    check_task(task, job)
    result = _run(train_loop_per_worker, {
        "task": task, "job": job, "logger": logger, "metric_prefix": metric_prefix, "seed": seed,
        "fail_at_step": fail_at_step, "best_uri": f"{storage}/{name}/best",
    }, job, storage, name)
    if result.checkpoint is None:
        raise RuntimeError(f"training run {name!r} finished without a checkpoint")
    local = Path(result.checkpoint.to_directory(str(download_to)))
    state = json.loads((local / STATE_FILE).read_text())
    return local, state


def fit_sequence(
    models: Sequence[tuple[str, TrainingTask]],
    job: TrainJob,
    storage: str,
    name: str,
    seed: int,
    logger: RunLogger | None = None,
    fail_at_step: int = 0,
    fail_in: str = "",
) -> dict[str, str]:
    """Train every ``(model, task)`` of ``models`` in turn in one fit (`stages.training.sequence`),
    with the same ``job``; returns each model's finished folder (``model/``,
    ``trainer_state.json``, probe logits) in ``storage``. Metrics of each model go to
    ``logger`` under ``<model>.``. ``fail_at_step`` / ``fail_in``: one injected worker
    failure in model ``fail_in`` (tests of restarts)."""
    for _, task in models:
        check_task(task, job)
    _run(train_sequence_per_worker, {  # raises when the workers fail past max_failures
        "models": models, "job": job, "logger": logger, "seed": seed, "storage": storage, "name": name,
        "fail_at_step": fail_at_step, "fail_in": fail_in,
    }, job, storage, name)
    finished = {model: finished_uri(storage, name, model) for model, _ in models}
    missing = [m for m, uri in finished.items() if not exists(f"{uri}/{DONE}")]
    if missing:
        raise RuntimeError(f"training run {name!r} ended without finishing {missing}")
    return finished


def export_finished(finished: str, dest: Path) -> dict[str, Any]:
    """Copy a model `fit_sequence` finished (its folder ``finished``) into a stage's output:
    ``dest/model`` and ``dest/trainer_state.json``; returns the trainer state."""
    from stages.training.storage import copy_tree

    copy_tree(f"{finished}/model", str(dest / "model"))
    copy_tree(f"{finished}/{STATE_FILE}", str(dest / STATE_FILE))
    return json.loads((dest / STATE_FILE).read_text())


def train_into_stage_output(ctx: StageContext, task: TrainingTask, job: TrainJob, job_key: str,
                            model_dir: str, seed: int, model_lm: CausalLM | None = None) -> dict[str, Any]:
    """The body of a single-model training stage: check resources, fit with ``seed`` (the
    stage's ``run.seed``; resuming an interrupted attempt of the same key, unless forced),
    export ``<output>/<model_dir>``, the probe logits and ``trainer_state.json``, document the
    model (``model_lm``: the ``model.lm`` section of a stage training on a Nugget2D base LM,
    `document_models`), drop the checkpoints, log the summary. Everything it reads comes
    from its arguments: the stage's typed config, not the context's."""
    check_resources(job, job_key)
    if ctx.forced:  # never resume a forced recompute from an older attempt
        clear_storage(ctx.work_uri, "train")
    with tempfile.TemporaryDirectory(prefix="nugget-checkpoint-") as tmp:
        checkpoint, state = fit(task, job, ctx.work_uri, "train", seed, ctx.logger,
                                download_to=tmp)
        shutil.copytree(checkpoint / "model", ctx.output_dir / model_dir)
        shutil.copy(checkpoint / PROBE_FILE, ctx.output_dir / PROBE_FILE)
    ctx.write_json("trainer_state.json", state)
    document_models(ctx, job, {ctx.output_dir / model_dir: task}, model_lm)
    clear_storage(ctx.work_uri, "train")
    ctx.log_metrics(final_metrics(state))
    return state


def final_metrics(state: dict[str, Any], prefix: str = "") -> dict[str, float]:
    """A finished fit's summary as stage metrics (``<prefix>.`` + name when ``prefix``):
    ``final_train_loss`` (+ ``_n``: sequences in that step), ``best_dev_loss`` (+ ``_n``:
    dev target tokens), ``initial_dev_loss`` (step 0, before any update) and
    ``exported_dev_loss`` (the weights the fit ended with; each + ``_n``), ``steps``,
    ``tokens_seen`` and ``stopped_early`` (0 / 1); where the fit measured its input use
    (`stages.training.input_use`), ``input_use_own`` / ``_other`` / ``_rise`` / ``_rise_low`` /
    ``_rise_high`` with ``input_use_n`` (dev examples)."""
    n_dev = state.get("dev_loss_n", 0)
    metrics = {
        "final_train_loss": state["losses"][-1],
        "final_train_loss_n": state.get("train_loss_n", 0),
        "best_dev_loss": state["best_dev_loss"],
        "best_dev_loss_n": n_dev,
        "initial_dev_loss": state["initial_dev_loss"],
        "initial_dev_loss_n": n_dev,
        "exported_dev_loss": state["exported_dev_loss"],
        "exported_dev_loss_n": n_dev,
        "steps": state["step"],
        "tokens_seen": state["tokens_seen"],
        "stopped_early": float(state["stopped_early"]),
    }
    use = state.get("input_use")
    if use is not None:
        metrics.update(input_use_metrics(InputUse(**use)))
    return {f"{prefix}.{k}" if prefix else k: v for k, v in metrics.items()}
