"""Nugget2D training on Ray Train (tiny random LLaMA): compressor and autoregressive
objectives train, and the exported model reloads to the logits it had in the worker."""

from __future__ import annotations

import random

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch

from stages.config import load_config
from stages.framework.tracking import Tracker
from stages.nugget2d.artifacts import LMRecords
from stages.nugget2d.nugget2d_task import (
    AutoregressiveModule,
    CompressorModule,
    Nugget2DARTask,
    Nugget2DCompressorTask,
)
from stages.training.launch import fit
from stages.training.loop import PROBE_FILE

pytestmark = [pytest.mark.ray, pytest.mark.slow]


@pytest.fixture(scope="module")
def lm_artifacts(tmp_path_factory):
    from nugget_core import train_bpe_tokenizer
    from nugget_core.nugget2d import TinyCausalSpec, build_tiny_causal_lm

    root = tmp_path_factory.mktemp("n2d")
    tok = train_bpe_tokenizer(["the cat sat on a mat and a dog ran"] * 10, vocab_size=300)
    base = root / "base"
    lm = build_tiny_causal_lm("llama", TinyCausalSpec(vocab_size=len(tok)))
    lm.save_pretrained(base)
    tok.save_pretrained(base)
    rng = random.Random(0)
    doc = lambda n: [rng.randrange(5, 60) for _ in range(n)]  # noqa: E731
    data = root / "data"
    data.mkdir()
    cont = [{"split": s, "doc": doc(12), "prompt": doc(3), "answer": doc(5)} for s in ["train"] * 16 + ["dev"] * 4]
    segs = [{"split": s, "distant": doc(12), "recent": doc(6)} for s in ["train"] * 16 + ["dev"] * 4]
    pq.write_table(pa.Table.from_pylist(cont), data / "continuation.parquet")
    pq.write_table(pa.Table.from_pylist(segs), data / "lm_pile.parquet")
    return base, data


@pytest.mark.parametrize("objective, workers", [("continuation", 2), ("autoregressive", 1)])
def test_nugget2d_objective_trains_and_reloads(ray_local, lm_artifacts, tmp_path, objective, workers):
    from nugget_core.nugget2d import load_nugget2d
    base, data = lm_artifacts
    job_key = "nugget2d_ar" if objective == "autoregressive" else "nugget2d"
    cfg = load_config([
        "nugget2d.ratio=0.25", "nugget2d.scorer_layer=1", "nugget2d.lora_rank=4", "nugget2d.recent_window=6",
        f"train.{job_key}.num_workers={workers}", f"train.{job_key}.max_steps=12",
        f"train.{job_key}.batch_size=4", f"train.{job_key}.lr=5e-3", f"train.{job_key}.eval_every=12",
        f"train.{job_key}.checkpoint_every=12", f"train.{job_key}.schedule=constant",
        f"train.{job_key}.warmup_steps=0",
    ])
    job = getattr(cfg.train, job_key)
    if objective == "autoregressive":
        task = Nugget2DARTask(LMRecords(data), str(base), cfg.nugget2d, seed=0)
    else:
        task = Nugget2DCompressorTask(LMRecords(data), str(base), cfg.nugget2d, objective=objective, seed=0)
    tracker = Tracker(f"sqlite:///{tmp_path}/mlflow.db", "n2d", str(tmp_path / "mlartifacts"))
    logger = tracker.start_run("train_nugget2d", {"stage": "train_nugget2d"})
    checkpoint, state = fit(task, job, str(tmp_path), "n2d", seed=0, logger=logger, download_to=tmp_path / "final")
    losses = state["losses"]
    assert len(losses) == 12 and sum(losses[-3:]) < sum(losses[:3])  # it learns
    # a readable curve: train/loss at every step (default log_every=1), not only at checkpoints
    history = tracker.client.get_metric_history(logger.run_id, "train/loss")
    assert len({m.step for m in history}) >= 12
    saved = load_nugget2d(checkpoint / "model", base)
    model = (AutoregressiveModule(saved) if objective == "autoregressive" else CompressorModule(saved, objective)).eval()
    probe = task.collate(task.load_split("dev")[:4], step=-1, rank=0, train=False)
    with torch.no_grad():
        torch.testing.assert_close(task.logits(model, probe), torch.load(checkpoint / PROBE_FILE))
