"""Training "until convergence on the dev set" (Nugget app. B.1), without Ray: a fit stops
after ``early_stopping_patience`` evaluations without improvement, and with
``export_model=best_dev`` ends with its best evaluation's weights, also across a restart."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from torch import nn

from stages.config.job import TrainJob
from stages.training.best_weights import BEST_FILE
from stages.training.loop import STATE_FILE, train_task
from tests.training.fixtures import ScalarRowsTask


class Line(nn.Module):
    """``y = w x + b`` from 0: trained towards y = 2x, scored on dev against y = x, so its dev
    loss falls until w passes 1, then rises."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(1, 1)
        nn.init.zeros_(self.lin.weight)
        nn.init.zeros_(self.lin.bias)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> SimpleNamespace:
        out = self.lin(x[:, None])[:, 0]
        return SimpleNamespace(loss=((out - y) ** 2).mean(), logits=out[:, None, None])


class LineTask(ScalarRowsTask):
    weights_file = "line.pt"

    def load_split(self, split: str) -> list[float]:
        return [i / 8 for i in range(1, 17 if split == "train" else 5)]

    def build_model(self, init_dir: Path | None) -> nn.Module:
        model = Line()
        if init_dir is not None:
            model.load_state_dict(torch.load(init_dir / "line.pt", weights_only=True))
        return model

    def collate(self, rows: list[float], step: int, rank: int, train: bool) -> dict[str, torch.Tensor]:
        x = torch.tensor(rows)
        return {"x": x, "y": 2 * x if train else x}


def dev_loss_of(model_dir: Path) -> float:
    task = LineTask()
    with torch.no_grad():
        return task.build_model(model_dir)(**task.collate(task.load_split("dev"), -1, 0, False)).loss.item()


def _fit(tmp_path: Path, name: str, export: str, checkpoint=None, fail_at: int = 0):
    job = TrainJob(max_steps=200, batch_size=4, lr=0.02, eval_every=4, checkpoint_every=4,
                   early_stopping_patience=2, export_model=export)
    config = {"job": job, "logger": None, "seed": 0, "fail_at_step": fail_at, "best_uri": str(tmp_path / name)}
    return train_task(LineTask(), config, checkpoint)


def test_stops_after_patience_and_exports_the_best_evaluation(checkpoints, tmp_path):
    state = _fit(tmp_path, "best", "best_dev")
    best = state.dev_losses.index(min(state.dev_losses))
    assert best > 0  # improved, then got worse
    # stopped after two evaluations without improvement, long before max_steps
    assert state.stopped_early and len(state.dev_losses) == best + 3 and state.step < 200
    assert state.best_step == 4 * (best + 1) and state.exported_step == state.best_step
    final = checkpoints[-1]
    assert dev_loss_of(final / "model") == pytest.approx(state.best_dev_loss, rel=1e-6)
    assert dev_loss_of(final / "model") < state.dev_losses[-1]  # not the last step's weights
    # only the best evaluation's weights stay in the storage
    assert [p.name for p in (tmp_path / "best").iterdir()] == [f"step-{state.best_step}"]
    assert (tmp_path / "best" / f"step-{state.best_step}" / BEST_FILE).exists()

    last = _fit(tmp_path, "final", "final")  # export_model=final: the same run, the last step's weights
    assert last.losses == state.losses and last.exported_step == last.step
    assert dev_loss_of(checkpoints[-1] / "model") == pytest.approx(last.dev_losses[-1], rel=1e-6)
    assert not (tmp_path / "final").exists()


def test_a_restart_after_the_best_evaluation_exports_the_same_model(checkpoints, tmp_path):
    import ray.train

    whole = _fit(tmp_path, "whole", "best_dev")
    model = torch.load(checkpoints[-1] / "model" / "line.pt", weights_only=True)
    checkpoints.clear()
    fail_at = whole.best_step + 5  # after the checkpoint at best_step + 4, before the end
    with pytest.raises(RuntimeError, match="injected failure"):
        _fit(tmp_path, "restarted", "best_dev", fail_at=fail_at)
    resumed = _fit(tmp_path, "restarted", "best_dev", ray.train.Checkpoint.from_directory(str(checkpoints[-1])),
                   fail_at=fail_at)
    assert resumed.resumed_from_step == whole.best_step + 4
    assert resumed.losses == whole.losses and resumed.dev_losses == whole.dev_losses
    assert resumed.exported_step == whole.best_step
    again = torch.load(checkpoints[-1] / "model" / "line.pt", weights_only=True)
    assert all(torch.equal(again[k], model[k]) for k in model)
    assert json.loads((checkpoints[-1] / STATE_FILE).read_text())["exported_step"] == whole.best_step


def test_best_dev_without_a_storage_fails_before_training(checkpoints):
    job = TrainJob(max_steps=4, batch_size=4, eval_every=4, checkpoint_every=4, export_model="best_dev")
    with pytest.raises(ValueError, match="export_model=best_dev: the loop config has no best_uri"):
        train_task(LineTask(), {"job": job, "logger": None, "seed": 0}, None)
    assert checkpoints == []


DEEPSPEED_FIT = r"""
import json, os, sys
from pathlib import Path
from types import SimpleNamespace

os.environ.update(DS_ACCELERATOR="cpu", RANK="0", WORLD_SIZE="1", LOCAL_RANK="0", MASTER_ADDR="127.0.0.1")
import ray.train
import torch.distributed as dist

dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{sys.argv[2]}", rank=0, world_size=1)
kept = []
ray.train.get_context = lambda: SimpleNamespace(get_world_rank=lambda: 0, get_world_size=lambda: 1)
ray.train.get_checkpoint = lambda: None
def report(metrics, checkpoint=None):
    import shutil
    if checkpoint is not None:
        kept.append(shutil.copytree(checkpoint.path, Path(sys.argv[1]) / f"ckpt{len(kept)}"))
ray.train.report = report

from stages.config.job import TrainJob
from stages.training.loop import train_task
from tests.training.test_best_dev_export import LineTask, dev_loss_of

job = TrainJob(backend="deepspeed", max_steps=200, batch_size=4, lr=0.02, eval_every=4, checkpoint_every=4,
               early_stopping_patience=2, export_model="best_dev")
state = train_task(LineTask(), {"job": job, "logger": None, "seed": 0, "best_uri": str(Path(sys.argv[1]) / "best")},
                   None)
print(json.dumps({"dev_losses": state.dev_losses, "best": state.best_dev_loss, "best_step": state.best_step,
                  "exported_step": state.exported_step, "step": state.step,
                  "exported_dev_loss": dev_loss_of(Path(kept[-1]) / "model")}))
"""


@pytest.mark.slow
def test_a_deepspeed_fit_exports_the_best_evaluation_too(tmp_path):
    """profile=paper's Nugget2D jobs run on DeepSpeed ZeRO-2 with export_model=best_dev: the best
    evaluation's trainable parameters, restored into rank 0's module, are what the fit exports."""
    import os
    import socket
    import subprocess
    import sys

    repo = Path(__file__).resolve().parents[2]
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "PYTHONPATH": str(repo), "PYTHONDONTWRITEBYTECODE": "1"}
    proc = subprocess.run([sys.executable, "-c", DEEPSPEED_FIT, str(tmp_path), str(port)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["step"] < 200 and out["best_step"] < out["step"]  # stopped early, after the best evaluation
    assert out["exported_step"] == out["best_step"]
    assert out["exported_dev_loss"] == pytest.approx(out["best"], rel=1e-5)
    assert out["exported_dev_loss"] < out["dev_losses"][-1]  # not the last step's weights
