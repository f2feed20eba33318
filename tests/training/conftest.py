from __future__ import annotations

import itertools
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.training.fixtures import make_mt_artifacts


@pytest.fixture
def checkpoints(monkeypatch, tmp_path):
    """Ray Train's session faked for the loop run in-process (rank 0 of 1, no checkpoint to
    resume): every reported checkpoint is kept, in order."""
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


@pytest.fixture(scope="module")
def mt_artifacts(tmp_path_factory) -> tuple[Path, Path]:
    return make_mt_artifacts(tmp_path_factory.mktemp("mt"))


TINY = [
    "nugget.ratio=0.25",
    "nugget.scorer_layer=1",
    "model.seq2seq.tiny.layers=2",
    "model.seq2seq.tiny.d_model=32",
    "model.seq2seq.tiny.ffn_dim=64",
    "train.nugget.num_workers=2",
    "train.nugget.max_steps=20",
    "train.nugget.batch_size=8",
    "train.nugget.eval_every=10",
    "train.nugget.checkpoint_every=10",
    "train.nugget.log_every=5",
]
