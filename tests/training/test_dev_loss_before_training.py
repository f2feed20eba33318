"""Learning is visible: every fit of the shared loop evaluates its dev loss at step 0 (before
any update) and at its last step, logs both to MLflow on the step axis, and keeps the
step-0 value, the exported weights' dev loss and the tokens seen in its trainer state,
across a restart too; without Ray (its session faked), for both entry points (one model
per fit, several in sequence) and for every training task type."""

from __future__ import annotations

import itertools
import json
import math
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest

from stages.config.train import TrainJob
from stages.train.loop import STATE_FILE, train_loop_per_worker, train_task
from stages.train.sequence import finished_uri, train_sequence_per_worker
from tests.training.test_best_dev_export import LineTask, dev_loss_of
from tests.training.test_loop_logging import RecordingRunLogger


@pytest.fixture
def checkpoints(monkeypatch, tmp_path):
    """Ray Train's session faked (rank 0 of 1, no checkpoint to resume): every reported
    checkpoint is kept, in order."""
    import ray.train

    kept: list[Path] = []
    names = itertools.count()

    def report(metrics, checkpoint=None):
        if checkpoint is not None:
            kept.append(Path(shutil.copytree(checkpoint.path, tmp_path / f"ckpt{next(names)}")))

    monkeypatch.setattr(ray.train, "get_context", lambda: SimpleNamespace(get_world_rank=lambda: 0,
                                                                           get_world_size=lambda: 1))
    monkeypatch.setattr(ray.train, "get_checkpoint", lambda: None)
    monkeypatch.setattr(ray.train, "report", report)
    return kept


# 10 steps, evaluations every 4: the last step (10) is no multiple of eval_every
JOB = TrainJob(max_steps=10, batch_size=4, lr=0.02, eval_every=4, checkpoint_every=4)


def _values(logger: RecordingRunLogger, name: str) -> dict[int, float]:
    return {s: v for k, v, s in logger.metrics if k == name}


def _assert_learning_recorded(logger: RecordingRunLogger, state: dict, prefix: str = "") -> None:
    dev = _values(logger, f"{prefix}eval/dev_loss")
    assert sorted(dev) == [0, 4, 8, 10]  # before any update, every eval_every, the last step
    assert dev[0] == state["initial_dev_loss"] == pytest.approx(dev_loss_of(None), rel=1e-6)  # untrained
    assert dev[10] == state["exported_dev_loss"] == state["dev_losses"][-1]
    assert state["dev_losses"] == [dev[4], dev[8], dev[10]]  # step 0 is no early-stopping candidate
    assert _values(logger, f"{prefix}eval/dev_loss_n") == {0: 4.0}
    assert state["tokens_seen"] == 10 * 4  # 10 steps of 4 one-token rows


def test_a_fit_logs_its_dev_loss_before_training_and_at_its_last_step(checkpoints):
    logger = RecordingRunLogger()
    train_loop_per_worker({"task": LineTask(), "job": JOB, "logger": logger, "seed": 0})
    state = json.loads((checkpoints[-1] / STATE_FILE).read_text())
    _assert_learning_recorded(logger, state)
    assert state["exported_dev_loss"] < state["initial_dev_loss"]  # LineTask learns at first


def test_each_model_of_a_sequence_logs_its_own_step_0(checkpoints, tmp_path):
    logger = RecordingRunLogger()
    train_sequence_per_worker({"models": [("one", LineTask()), ("two", LineTask())], "job": JOB, "logger": logger,
                               "seed": 0, "storage": str(tmp_path / "storage"), "name": "seq"})
    for model in ("one", "two"):
        state = json.loads((Path(finished_uri(str(tmp_path / "storage"), "seq", model)) / STATE_FILE).read_text())
        _assert_learning_recorded(logger, state, prefix=f"{model}.")


def test_best_dev_export_records_the_best_evaluations_dev_loss(checkpoints, tmp_path):
    job = TrainJob(max_steps=200, batch_size=4, lr=0.02, eval_every=4, checkpoint_every=4,
                   early_stopping_patience=2, export_model="best_dev")
    state = train_task(LineTask(), {"job": job, "logger": None, "seed": 0, "best_uri": str(tmp_path / "best")}, None)
    assert state.stopped_early and state.exported_step == state.best_step != state.step
    assert state.exported_dev_loss == state.best_dev_loss < state.dev_losses[-1]
    assert state.initial_dev_loss == pytest.approx(dev_loss_of(None), rel=1e-6)


def test_a_resumed_fit_keeps_the_step_0_dev_loss_without_recomputing_it(checkpoints, monkeypatch):
    import ray.train

    import stages.train.loop as loop

    whole = train_task(LineTask(), {"job": JOB, "logger": None, "seed": 0}, None)
    checkpoints.clear()
    with pytest.raises(RuntimeError, match="injected failure"):
        train_task(LineTask(), {"job": JOB, "logger": None, "seed": 0, "fail_at_step": 6}, None)
    evaluated_at: list[int] = []
    evaluate = loop.evaluate

    def spy(engine, task, dev, rank, world, job):
        evaluated_at.append(len(evaluated_at))
        return evaluate(engine, task, dev, rank, world, job)

    monkeypatch.setattr(loop, "evaluate", spy)
    logger = RecordingRunLogger()
    resumed = train_task(LineTask(), {"job": JOB, "logger": logger, "seed": 0, "fail_at_step": 6},
                         ray.train.Checkpoint.from_directory(str(checkpoints[-1])))
    assert resumed.resumed_from_step == 4
    assert len(evaluated_at) == 2  # steps 8 and 10 only: step 0's value came from the checkpoint
    assert sorted(_values(logger, "eval/dev_loss")) == [8, 10]  # step 0 was logged by the first attempt
    assert resumed.initial_dev_loss == whole.initial_dev_loss and math.isfinite(resumed.initial_dev_loss)
    assert resumed.tokens_seen == whole.tokens_seen == 40  # counted across the restart
    assert resumed.exported_dev_loss == whole.exported_dev_loss and resumed.losses == whole.losses
