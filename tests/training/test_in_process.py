"""A one-worker CPU fit trains in the calling process (`stages.training.session`), with Ray
Train's guarantees: checkpoints in the run's storage (the newest two kept, each marked complete
last), exact resume after an injected failure (``max_failures``) and on a new attempt, and a
worker group for everything else. No Ray instance is needed."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch

from stages.config.job import TrainJob
from stages.training import session
from stages.training.launch import fit
from stages.training.session import COMPLETE_MARK, InProcessSession, in_process
from tests.training.test_best_dev_export import LineTask


class PidLineTask(LineTask):
    """`LineTask` that records the process building its model."""

    pids: list[int] = []

    def build_model(self, init_dir: Path | None) -> torch.nn.Module:
        self.pids.append(os.getpid())
        return super().build_model(init_dir)


def _job(**overrides) -> TrainJob:
    base = dict(max_steps=24, batch_size=4, lr=0.02, eval_every=4, checkpoint_every=4, log_every=4,
                num_workers=1, backend="ddp", max_failures=1)
    return TrainJob(**{**base, **overrides})


def _fit(tmp_path: Path, name: str, job: TrainJob, fail_at: int = 0, storage: Path | None = None):
    return fit(PidLineTask(), job, str(storage or tmp_path / "storage"), name, seed=0, fail_at_step=fail_at,
               download_to=tmp_path / f"final-{name}")


def test_a_one_worker_cpu_fit_trains_here_and_keeps_the_newest_two_checkpoints(tmp_path):
    PidLineTask.pids.clear()
    checkpoint, state = _fit(tmp_path, "run", _job())
    assert PidLineTask.pids == [os.getpid()]  # no worker process
    assert state["step"] == 24 and len(state["losses"]) == 24 and state["resumed_from_step"] == -1
    kept = sorted(p.name for p in (tmp_path / "storage" / "run").iterdir())
    assert kept == ["checkpoint_000004", "checkpoint_000005"]  # 6 reported (every 4 steps), 2 kept
    assert all((tmp_path / "storage" / "run" / k / COMPLETE_MARK).exists() for k in kept)
    assert (checkpoint / "model" / "line.pt").exists()


def test_an_injected_failure_resumes_exactly_from_the_newest_checkpoint(tmp_path):
    _, uninterrupted = _fit(tmp_path, "plain", _job())
    _, state = _fit(tmp_path, "crash", _job(), fail_at=10)
    assert state["resumed_from_step"] == 8  # the step-8 checkpoint
    assert state["losses"] == uninterrupted["losses"] and state["dev_losses"] == uninterrupted["dev_losses"]


def test_failures_past_max_failures_raise_and_a_new_attempt_resumes(tmp_path):
    _, uninterrupted = _fit(tmp_path, "plain", _job())
    with pytest.raises(RuntimeError, match="injected failure at step 10"):
        _fit(tmp_path, "again", _job(max_failures=0), fail_at=10)
    _, state = _fit(tmp_path, "again", _job(max_failures=0))  # the stage's next attempt
    assert state["resumed_from_step"] == 8
    assert state["losses"] == uninterrupted["losses"]


def test_a_checkpoint_without_its_mark_is_never_resumed_from(tmp_path):
    run = tmp_path / "run"
    (run / "checkpoint_000000").mkdir(parents=True)
    (run / "checkpoint_000000" / COMPLETE_MARK).write_text("complete\n")
    (run / "checkpoint_000001").mkdir()  # a copy cut short: no mark
    found = InProcessSession(str(run)).checkpoint()
    assert Path(found.path).name == "checkpoint_000000"
    assert InProcessSession(str(tmp_path / "empty")).checkpoint() is None


def test_only_one_cpu_worker_on_ddp_trains_in_process(monkeypatch):
    assert in_process(_job())
    assert not in_process(_job(num_workers=2))
    assert not in_process(_job(use_gpu=True))
    assert not in_process(_job(backend="deepspeed"))
    monkeypatch.setenv("NUGGET_TRAIN_IN_PROCESS", "0")
    assert not in_process(_job())


def test_outside_an_in_process_fit_the_loop_reports_to_ray_train():
    assert isinstance(session.current(), session.RaySession)
