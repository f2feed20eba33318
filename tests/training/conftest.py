from __future__ import annotations

from pathlib import Path

import pytest

from tests.framework.conftest import ray_local  # noqa: F401  (session Ray fixture)
from tests.training.fixtures import make_mt_artifacts


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
