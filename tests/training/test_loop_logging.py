"""The training loop's MLflow logging, without Ray: rank 0 logs train/loss / train/lr /
train/tokens_per_s every ``log_every`` steps (default: every step), eval/dev_loss on the
same step axis and its n once at step 0, through the RunLogger it is handed, prefixed
when asked, and prints progress lines; a toy task stands in for the model families (it
also exercises the `TrainingTask` protocol with a minimal class)."""

from __future__ import annotations

import logging
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from torch import nn

from stages.config.job import TrainJob
from stages.framework.tracking import MetricBuffer
from stages.training.loop import train_loop_per_worker
from stages.training.task import TrainingTask, protocol_mismatches
from tests.training.fixtures import ScalarRowsTask


class Toy(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(1, 1)

    def forward(self, x: torch.Tensor) -> SimpleNamespace:
        out = self.lin(x[:, None])
        return SimpleNamespace(loss=((out[:, 0] - 2 * x) ** 2).mean(), logits=out[:, None])


class ToyTask(ScalarRowsTask):

    def load_split(self, split: str) -> list[float]:
        return [i / 10 for i in range(16 if split == "train" else 4)]

    def build_model(self, init_dir: Path | None) -> nn.Module:
        torch.manual_seed(0)
        return Toy()

    def collate(self, rows: list[float], step: int, rank: int, train: bool) -> dict[str, torch.Tensor]:
        return {"x": torch.tensor(rows)}


class RecordingRunLogger:
    """The parts of `RunLogger` the loop uses, recorded."""

    def __init__(self) -> None:
        self.metrics: list[tuple[str, float, int]] = []
        self.params: dict[str, object] = {}
        self.sizes: dict[str, float] = {}  # sample sizes (`RunLogger.log_sample_sizes`: params)
        self.batches = 0

    def log_metric_entities(self, metrics: list) -> None:
        self.batches += 1
        self.metrics += [(m.key, m.value, m.step) for m in metrics]

    def log_params(self, params: dict[str, object]) -> None:
        self.params.update(params)

    def log_sample_sizes(self, sizes: dict[str, float]) -> None:
        self.sizes.update(sizes)

    def run_name(self) -> str:
        return "toy_stage r=0.1"

    def steps(self, name: str) -> list[int]:
        return [s for k, _, s in self.metrics if k == name]


@pytest.fixture
def fake_ray_train(monkeypatch):
    import ray.train

    reports: list[dict] = []
    ctx = SimpleNamespace(get_world_rank=lambda: 0, get_world_size=lambda: 1)
    monkeypatch.setattr(ray.train, "get_context", lambda: ctx)
    monkeypatch.setattr(ray.train, "get_checkpoint", lambda: None)
    monkeypatch.setattr(ray.train, "report", lambda metrics, checkpoint=None: reports.append(dict(metrics)))
    return reports


def _run(logger, **config) -> None:
    job = TrainJob(max_steps=12, batch_size=4, eval_every=6, checkpoint_every=6, lr=1e-2)
    train_loop_per_worker({"task": ToyTask(), "job": job, "logger": logger, "seed": 0, **config})


def test_toy_task_satisfies_the_protocol():
    assert protocol_mismatches(ToyTask) == [] and isinstance(ToyTask(), TrainingTask)


def test_short_run_logs_train_loss_every_step_with_dev_loss_n(fake_ray_train):
    logger = RecordingRunLogger()
    _run(logger)
    assert TrainJob().log_every == 1
    assert len(set(logger.steps("train/loss"))) >= 12  # a readable curve: every step
    assert logger.steps("train/loss") == list(range(1, 13))  # each step once
    assert logger.steps("train/lr") == logger.steps("train/tokens_per_s") == list(range(1, 13))
    assert logger.steps("eval/dev_loss") == [0, 6, 12]  # the train loss's step axis, from before any update
    # a constant, so a sample size (a param), not a curve: 4 dev rows x 1 target
    assert logger.steps("eval/dev_loss_n") == [] and logger.sizes == {"eval/dev_loss_n": 4.0}
    assert logger.params["train.examples_per_step"] == 4 and "params.trainable" in logger.params
    assert logger.batches == 2  # batched: one log_batch per checkpoint, not one per step
    assert [r["step"] for r in fake_ray_train] == [6, 12]  # Ray Train: checkpoint cadence only


def test_metric_prefix_names_one_fit_among_several(fake_ray_train):
    logger = RecordingRunLogger()
    _run(logger, metric_prefix="tsdae_ae")
    assert {k for k, _, _ in logger.metrics} == {
        "tsdae_ae.train/loss", "tsdae_ae.train/lr", "tsdae_ae.train/tokens_per_s", "tsdae_ae.eval/dev_loss",
    }
    assert set(logger.sizes) == {"tsdae_ae.eval/dev_loss_n"}
    assert "tsdae_ae.train.world_size" in logger.params


def test_metric_buffer_flushes_by_time():
    logger = RecordingRunLogger()
    buffer = MetricBuffer(logger, flush_seconds=0.0)
    buffer.add({"a": 1.0}, step=1)
    assert logger.metrics == [("a", 1.0, 1)] and buffer.pending == []


def test_rank0_prints_progress_lines_named_after_the_run(fake_ray_train, caplog, monkeypatch):
    monkeypatch.setenv("NUGGET_PROGRESS_SECONDS", "3600")  # only the last step's line is due
    caplog.set_level(logging.INFO, logger="nugget.train")
    _run(RecordingRunLogger(), metric_prefix="tsdae_ae")
    lines = [r.getMessage() for r in caplog.records if r.name == "nugget.train"]
    assert len(lines) == 4
    assert lines[0].startswith("toy_stage r=0.1 tsdae_ae dev loss before training ")  # step 0
    assert lines[1].startswith("toy_stage r=0.1 tsdae_ae step 12/12 loss ") and " tok/s eta 0s" in lines[1]
    # the end-of-fit input-use check (stages.training.input_use): the toy task names no compressed input
    assert lines[2] == "toy_stage r=0.1 tsdae_ae input use: not measured, no compressed input (ToyTask defines no mismatch)"
    assert lines[3].startswith("toy_stage r=0.1 tsdae_ae dev loss ") and " after 12 steps (48 tokens seen)" in lines[3]
