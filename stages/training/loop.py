"""The per-worker training loop run by Ray Train (``train_loop_per_worker``).

One loop for every task (a `stages.training.task.TrainingTask`): the task object
builds the model, tokenises data, builds batches and computes the loss; this module owns
what is common: seeding, resume from the latest Ray Train checkpoint, the LR schedule,
gradient steps through :mod:`.engine`, dev evaluation with early stopping, periodic
checkpoints, and metrics.

Metrics go to MLflow from rank 0 only, through the `RunLogger` handed in
``config["logger"]`` (the stage's run, or a Tune trial's nested run; None = no MLflow),
batched by `stages.framework.tracking.MetricBuffer` (flushed at each checkpoint and at the
end), names prefixed with ``config["metric_prefix"] + "."`` when one is given (one run
holding several fits, e.g. ``train_baselines``' ``tsdae_ae.train_loss``). At step ``s``:

======================  =================================================================
``train/loss``          every ``job.log_every`` steps: the step's loss (mean NLL per target
                        token, averaged over micro-batches and ranks); its n is the param
                        ``train.examples_per_step`` (= batch_size x grad_accum x workers)
``train/lr``            every ``job.log_every`` steps: the learning rate of the step
``train/tokens_per_s``  every ``job.log_every`` steps: tokens (``task.n_tokens``, all
                        ranks) per second since the previous log
``eval/dev_loss``       at step 0 (before any update: the untrained model's), every
                        ``job.eval_every`` steps and at the last step (also when it is no
                        multiple of ``eval_every``), on the same step axis as
                        ``train/loss`` (one chart holds both): token-weighted mean dev loss
                        over all ranks
``eval/dev_loss_n``     once, at step 0 (a constant, not a curve): the dev target tokens
                        each ``eval/dev_loss`` averages over
======================  =================================================================

The step-0 evaluation is the fit's baseline, not a candidate of early stopping or of
``best_dev`` (`TrainerState.initial_dev_loss`, outside ``dev_losses``); with the dev loss
of the exported weights (``exported_dev_loss``) and the tokens seen it tells whether the
fit learned (the report's training section, `stages.artifacts.trainer_state`). Rank 0
logs it as a line (``... dev loss before training 7.12 (n = 512 tokens)``) and, at the
end, ``... dev loss 7.12 -> 3.40 after 200 steps``, with a warning when the end is above
the start. Before the final checkpoint rank 0 checks whether the exported weights read their
compressed input (`stages.training.input_use`: ``input_use`` / ``input_use_note`` in the trainer
state, ``eval/input_use_*`` at the last step, a line and a warning where the model ignores it).

The ``train/`` and ``eval/`` prefixes group the charts in MLflow's UI. Rank 0 also logs a
progress line through the ``nugget.train`` logger every few seconds and at the last step
(`stages.common.progress.TrainProgress`), labelled with the MLflow run's name (the stage
and its key parameters) and the metric prefix; it reaches the driver's log.

Params, once per fresh run: ``train.world_size``, ``train.train_examples``,
``train.dev_examples``, ``train.examples_per_step``, ``params.trainable`` /
``params.frozen``. The session (Ray Train's ``ray.train.report``, or the in-process session of a
one-worker CPU fit: `stages.training.session`) gets ``step`` / ``train_loss`` /
``dev_loss`` at evaluations and checkpoints only (each report synchronises the workers).

Resume is exact on CPU: a checkpoint holds the model, optimiser state, every rank's RNG
state and the trainer state (step, early-stopping counters, loss history, the step-0 dev
loss and the tokens seen: a resumed fit neither recomputes nor loses them), and batches
are a pure function of the step (:mod:`.batches`), so a run restarted from step ``s``
produces the same losses as an uninterrupted run.

Which weights a fit ends with (``job.export_model``): ``final``, those of its last step;
``best_dev``, those of its lowest-dev-loss evaluation, as early stopping "until
convergence on the dev set" (Nugget app. B.1) keeps them. For ``best_dev``, rank 0 writes
the trainable parameters at each improving evaluation to the fit's storage
(``config["best_uri"]/step-<s>/``, `best_weights_uri`), and the final checkpoint's model
is those weights (``TrainerState.exported_step``). A checkpoint's state names its best
step, whose weights stay in the storage until a later checkpoint names another, so a
restarted fit ends with the same model.
"""

from __future__ import annotations

import json
import math
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
import torch.distributed as dist

from stages.artifacts.trainer_state import TRAINER_STATE
from stages.common import device_guard
from stages.common.device import to_device
from stages.common.progress import (
    TrainProgress,
    dev_loss_rose,
    initial_dev_loss_line,
    learning_line,
    progress_seconds,
)
from stages.framework import quiet, sigterm
from stages.training import session
from stages.training.batches import BatchSchedule
from stages.training.best_weights import best_weights_uri, restore_best, save_best
from stages.training.engine import Engine, make_engine
from stages.training.input_use import check_input_use
from stages.training.storage import clear_storage
from stages.training.task import example_length_of

if TYPE_CHECKING:
    from stages.config.job import TrainJob
    from stages.framework.tracking import RunLogger
    from stages.training.task import Batch, TrainingTask

STATE_FILE = TRAINER_STATE
PROBE_FILE = "probe_logits.pt"
TAG_FILE = "tag.txt"  # which model of a multi-model fit a checkpoint belongs to


@dataclass
class TrainerState:
    step: int = 0
    losses: list[float] = field(default_factory=list)
    dev_losses: list[float] = field(default_factory=list)
    best_dev_loss: float = math.inf
    best_step: int = 0  # the step of best_dev_loss
    exported_step: int = 0  # the step whose weights the final checkpoint holds (export_model)
    evals_without_improvement: int = 0
    stopped_early: bool = False
    resumed_from_step: int = -1
    train_loss_n: int = 0  # sequences per optimiser step, all ranks (the n of each train loss)
    dev_loss_n: int = 0  # dev target tokens each dev loss averages over
    initial_dev_loss: float | None = None  # at step 0, before any update (None until evaluated)
    exported_dev_loss: float | None = None  # of the weights of exported_step (set at the end)
    tokens_seen: int = 0  # tokens (task.n_tokens) of every step so far, all ranks
    input_use: dict[str, float] | None = None  # own / other / low / high / n of the exported weights (input_use)
    input_use_note: str = ""  # why input_use is None


def lr_at(step: int, job: TrainJob) -> float:
    """Linear warm-up, then constant, cosine or linear decay to 0 at ``max_steps``."""
    if job.warmup_steps and step < job.warmup_steps:
        return job.lr * (step + 1) / job.warmup_steps
    span = max(1, job.max_steps - job.warmup_steps)
    progress = min(1.0, (step - job.warmup_steps) / span)
    if job.schedule == "cosine":
        return job.lr * 0.5 * (1.0 + math.cos(math.pi * progress))
    if job.schedule == "linear":
        return job.lr * (1.0 - progress)
    return job.lr


def record_dev_loss(state: TrainerState, dev_loss: float, patience: int) -> bool:
    """Track the best dev loss (and its step); stop after ``patience`` evaluations without
    improvement (0 = never). Every rank sees the same all-reduced loss, so all stop
    together. Returns whether ``dev_loss`` is a new best."""
    state.dev_losses.append(dev_loss)
    improved = dev_loss < state.best_dev_loss
    if improved:
        state.best_dev_loss, state.best_step, state.evals_without_improvement = dev_loss, state.step, 0
    else:
        state.evals_without_improvement += 1
    state.stopped_early = bool(patience) and state.evals_without_improvement >= patience
    return improved


def _all_reduce_sum(values: list[float], device: torch.device) -> list[float]:
    # on the worker's device: NCCL reduces CUDA tensors only
    t = torch.tensor(values, dtype=torch.float64, device=device)
    if dist.is_available() and dist.is_initialized():
        dist.all_reduce(t)
    return t.tolist()


def worker_device(job: TrainJob) -> torch.device:
    """This worker's device: the GPU Ray Train assigned it with ``use_gpu``, else the CPU."""
    if not job.use_gpu:
        return torch.device("cpu")
    import ray.train.torch

    device = ray.train.torch.get_device()
    torch.cuda.set_device(device)  # DeepSpeed and NCCL use the current device
    return device


def evaluate(engine: Engine, task: TrainingTask, dev: list, rank: int, world: int, job: TrainJob) -> tuple[float, int]:
    """(token-weighted mean dev loss over all ranks' shards, its target tokens)."""
    mine = dev[rank::world]
    loss_sum, tokens = 0.0, 0.0
    engine.module.eval()
    with torch.no_grad():
        for i in range(0, len(mine), job.batch_size):
            batch = task.collate(mine[i : i + job.batch_size], step=-1, rank=rank, train=False)
            n = task.n_target_tokens(batch)
            with engine.autocast():
                loss = task.loss(engine.forward, to_device(batch, engine.device))
            loss_sum += loss.item() * n
            tokens += n
    engine.module.train()
    loss_sum, tokens = _all_reduce_sum([loss_sum, tokens], engine.device)
    return loss_sum / max(tokens, 1.0), int(tokens)


def _save(engine: Engine, task: TrainingTask, state: TrainerState, rank: int, directory: Path, probe: Batch) -> None:
    if rank == 0:
        with engine.exporting():  # fp32 weights in the folder whatever the precision held in memory
            task.export(engine.module, directory / "model")
        (directory / STATE_FILE).write_text(json.dumps(asdict(state)))
        # logits of the in-memory model on a fixed batch: a reload must reproduce them
        # (saved on the CPU, so that a CPU-only reader loads them)
        engine.module.eval()
        with torch.no_grad(), engine.autocast():
            torch.save(to_device(task.logits(engine.module, probe), "cpu"), directory / PROBE_FILE)
        engine.module.train()
    torch.save(torch.get_rng_state(), directory / f"rng_rank{rank}.pt")
    if engine.device.type == "cuda":
        torch.save(torch.cuda.get_rng_state(engine.device), directory / f"cuda_rng_rank{rank}.pt")
    engine.save(directory, rank)


def _restore_state(directory: Path) -> TrainerState:
    state = TrainerState(**json.loads((directory / STATE_FILE).read_text()))
    state.resumed_from_step = state.step
    return state


def train_loop_per_worker(config: dict[str, Any]) -> None:
    """Entry point given to ``TorchTrainer`` (or run in process, `stages.training.session`);
    ``config`` holds task (a `stages.training.task.TrainingTask`), job, logger, metric_prefix,
    seed, fail_at_step."""
    train_task(config["task"], config, session.current().checkpoint())


def train_task(
    task: TrainingTask,
    config: dict[str, Any],
    checkpoint: Any,
    on_final: Callable[[Path], None] | None = None,
    tag: str = "",
) -> TrainerState:
    """Train ``task`` to its end on this worker (the body of `train_loop_per_worker`).

    ``checkpoint`` (a Ray Train checkpoint or None) is resumed from. ``on_final`` (rank 0
    only) is called with the final checkpoint's folder (model export, trainer state,
    probe logits) before that checkpoint is reported. ``tag`` is written into every checkpoint
    (``TAG_FILE``) so that a fit training several models in turn knows whose it is.
    """
    with device_guard.from_env():  # NUGGET_DEVICE_GUARD=1: every tensor on a declared device
        return _train(task, config, checkpoint, on_final, tag)


def _train(task: TrainingTask, config: dict[str, Any], checkpoint: Any, on_final: Callable[[Path], None] | None,
           tag: str) -> TrainerState:
    quiet.apply()  # this worker's libraries: NUGGET_VERBOSE from the job's runtime env
    sigterm.install()  # Ray's stop request landing in a finaliser exits without a traceback
    job: TrainJob = config["job"]
    logger: RunLogger | None = config.get("logger")
    prefix = f"{config['metric_prefix']}." if config.get("metric_prefix") else ""
    reporter = session.current()
    rank, world = reporter.rank(), reporter.world_size()
    torch.manual_seed(config["seed"] * 1000 + rank)

    state, init_dir, restored = TrainerState(), None, None
    if checkpoint is not None:  # a restart: continue from the latest checkpoint
        restored = Path(tempfile.mkdtemp(prefix="nugget-resume-"))
        with checkpoint.as_directory() as d:
            shutil.copytree(d, restored, dirs_exist_ok=True)
        state = _restore_state(restored)
        init_dir = restored / "model"

    train, dev = task.load_split("train"), task.load_split("dev")
    lengths = None
    if getattr(job, "group_by_length", False):
        example_length = example_length_of(task)
        lengths = [example_length(row) for row in train]
    device = worker_device(job)
    model = task.build_model(init_dir).to(device)  # tasks build on the CPU
    if getattr(job, "activation_checkpointing", False):
        task.enable_activation_checkpointing(model)
    model.train()  # from_pretrained returns eval-mode modules: dropout would be off after a resume
    engine = make_engine(model, job, task.find_unused_parameters, device)
    if restored is not None:
        engine.load(restored)
        # last: building the model and engine draws random numbers
        torch.set_rng_state(torch.load(restored / f"rng_rank{rank}.pt", weights_only=True))
        cuda_rng = restored / f"cuda_rng_rank{rank}.pt"
        if device.type == "cuda" and cuda_rng.exists():
            torch.cuda.set_rng_state(torch.load(cuda_rng, weights_only=True), device)
        shutil.rmtree(restored, ignore_errors=True)
    schedule = BatchSchedule(len(train), job.batch_size, rank, world, config["seed"], lengths)
    state.train_loss_n = job.batch_size * job.grad_accum * world
    metrics_out, progress = None, None
    if rank == 0 and logger is not None:
        from stages.framework.tracking import MetricBuffer  # mlflow: only where it logs

        metrics_out = MetricBuffer(logger, prefix)
    if rank == 0:
        label = " ".join(x for x in (logger.run_name() if logger is not None else "train",
                                     config.get("metric_prefix", "")) if x)
        progress = TrainProgress(label, job.max_steps, state.step, progress_seconds())
    if metrics_out is not None and logger is not None and checkpoint is None:
        params = {"train.world_size": world, "train.train_examples": len(train), "train.dev_examples": len(dev),
                  "train.examples_per_step": state.train_loss_n, **task.parameter_counts(model)}
        logger.log_params({f"{prefix}{k}": v for k, v in params.items()})

    probe = to_device(task.collate(dev[: job.batch_size], step=-1, rank=0, train=False), device)
    fail_at = config.get("fail_at_step", 0)
    keep_best = job.export_model == "best_dev"
    if keep_best:
        best_weights_uri(config, 0)  # a missing best_uri fails before training
    written: list[int] = []  # best steps this process wrote (dropped once a checkpoint names another)
    if state.initial_dev_loss is None and state.step == 0:  # a resumed fit's state carries it
        state.initial_dev_loss, state.dev_loss_n = evaluate(engine, task, dev, rank, world, job)
        if metrics_out is not None:
            metrics_out.add({"eval/dev_loss": state.initial_dev_loss, "eval/dev_loss_n": state.dev_loss_n}, 0)
        if progress is not None:
            progress.log.info(initial_dev_loss_line(progress.label, state.initial_dev_loss, state.dev_loss_n))
    tick, tokens = time.time(), 0.0
    while state.step < job.max_steps and not state.stopped_early:
        step = state.step
        lr = lr_at(step, job)
        micro = [
            to_device(task.collate([train[i] for i in schedule.indices(step * job.grad_accum + m)],
                                   step=step * job.grad_accum + m, rank=rank, train=True), device)
            for m in range(job.grad_accum)
        ]
        loss = engine.train_step(micro, lr, task.loss)
        mean_loss, n_tok = _all_reduce_sum([loss / world, sum(task.n_tokens(b) for b in micro)], device)
        state.losses.append(mean_loss)
        tokens += n_tok
        state.tokens_seen += int(n_tok)
        state.step += 1
        if fail_at and state.step == fail_at and state.resumed_from_step < 0:
            raise RuntimeError(f"injected failure at step {fail_at} (fail_at_step)")
        if progress is not None:
            progress.step(state.step, mean_loss, lr, n_tok)
        if metrics_out is not None and state.step % job.log_every == 0:
            now = time.time()
            metrics_out.add(
                {"train/loss": mean_loss, "train/lr": lr, "train/tokens_per_s": tokens / max(now - tick, 1e-9)},
                state.step,
            )
            tick, tokens = now, 0.0

        last = state.step == job.max_steps
        metrics: dict[str, float] = {"step": state.step, "train_loss": mean_loss}
        if state.step % job.eval_every == 0 or last:
            dev_loss, state.dev_loss_n = evaluate(engine, task, dev, rank, world, job)
            if record_dev_loss(state, dev_loss, job.early_stopping_patience) and keep_best and rank == 0:
                save_best(engine.module, best_weights_uri(config, state.step))
                written.append(state.step)
            metrics["dev_loss"] = dev_loss
            if metrics_out is not None:
                metrics_out.add({"eval/dev_loss": dev_loss}, state.step)
        if state.step % job.checkpoint_every == 0 or last or state.stopped_early:
            if metrics_out is not None:
                metrics_out.flush()  # what a restart would not log again
            final = last or state.stopped_early
            state.exported_step = state.step
            if final:  # both end on an evaluation of this step
                state.exported_dev_loss = state.dev_losses[-1]
            if final and keep_best and state.best_step != state.step:
                # the loop ends here: rank 0's model becomes the best evaluation's for the export
                if math.isinf(state.best_dev_loss):
                    raise RuntimeError(f"export_model=best_dev: no dev loss was finite ({state.dev_losses})")
                state.exported_step, state.exported_dev_loss = state.best_step, state.best_dev_loss
                if rank == 0:
                    restore_best(engine.module, best_weights_uri(config, state.best_step))
            if final and progress is not None:  # rank 0, on the weights it exports
                state.input_use, state.input_use_note = check_input_use(
                    task, engine.module, dev, job.batch_size, device, engine.autocast, progress.label, progress.log,
                    metrics_out, state.step)
            with tempfile.TemporaryDirectory() as tmp:
                _save(engine, task, state, rank, Path(tmp), probe)
                (Path(tmp) / TAG_FILE).write_text(tag)
                if rank == 0 and on_final is not None and final:
                    on_final(Path(tmp))  # before the report: a restart after it finds the model done
                reporter.report(metrics, Path(tmp))
            if keep_best and rank == 0:  # the reported state names best_step: other steps' weights can go
                for old in [s for s in written if s != state.best_step]:
                    clear_storage(config["best_uri"], f"step-{old}")
                    written.remove(old)
        elif "dev_loss" in metrics:
            reporter.report(metrics)
    if metrics_out is not None:
        metrics_out.flush()
    if progress is not None and state.initial_dev_loss is not None and state.exported_dev_loss is not None:
        line = learning_line(progress.label, state.initial_dev_loss, state.exported_dev_loss, state.step,
                             state.tokens_seen)
        (progress.log.warning if dev_loss_rose(state.initial_dev_loss, state.exported_dev_loss) else progress.log.info)(line)
    return state
