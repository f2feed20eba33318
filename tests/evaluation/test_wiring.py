"""Baseline task, optional upstreams, and reading the authors' nugget-data layout."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import torch

from stages.config import load_config
from stages.corpora.nugget_data import Task, write_dataset
from stages.framework.optional import resolve_optional_upstream
from stages.framework.stage import Stage
from stages.nugget.artifacts.data import MtDocuments
from stages.nugget.baseline_task import BaselineTask
from stages.nugget.config import BASELINE_SYSTEMS
from stages.nugget.similarity import read_similarity_data
from stages.nugget.train_baselines import SYSTEMS
from stages.nugget2d.config import PRESS_SYSTEMS, STREAMING_PRESS_SYSTEMS
from tests.training.fixtures import make_mt_artifacts


def test_schema_lists_every_baseline_system():
    assert tuple(SYSTEMS) == BASELINE_SYSTEMS


def test_schema_lists_every_kv_press():
    from nugget_core.nugget2d.presses import PRESSES, STREAMING_PRESSES

    assert (PRESS_SYSTEMS, STREAMING_PRESS_SYSTEMS) == (PRESSES, STREAMING_PRESSES)


def test_even_snapkv_kernel_is_refused_naming_the_field(tmp_path):
    with pytest.raises(ValueError, match="snapkv_kernel: value 4 must be odd"):
        load_config(["eval.presses.snapkv_kernel=4"])


def test_optional_upstream_only_when_registered():
    class A(Stage):
        name = "a"

    class B(Stage):
        name = "b"
        required_upstream = ("a",)
        optional_upstream = ("sweep_nugget", "eval_lm")

    class Sweep(Stage):
        name = "sweep_nugget"

    resolve_optional_upstream([A, B])
    assert B.upstream == ("a",)
    resolve_optional_upstream([A, B, Sweep])
    assert B.upstream == ("a", "sweep_nugget")


def test_authors_layout_reads_like_ours(tmp_path):
    docs = [("L0", "a b c"), ("R0", "a b d"), ("R1", "x y z")]
    write_dataset(tmp_path, docs, [Task("L0", ("R1", "R0"), 1)])
    ours = read_similarity_data(tmp_path)
    theirs = read_similarity_data(tmp_path / "nugget-data")  # task.jsonl + docs.txt
    assert ours == theirs and ours[0][0].positive == "R0"
    with pytest.raises(FileNotFoundError):
        read_similarity_data(tmp_path / "missing")


@pytest.fixture(scope="module")
def task_args(tmp_path_factory):
    data, tok = make_mt_artifacts(tmp_path_factory.mktemp("mt"), n_train=16, n_dev=8)
    cfg = load_config(["model.seq2seq.tiny.layers=2", "model.seq2seq.tiny.d_model=32",
                       "model.seq2seq.tiny.ffn_dim=64", "nugget.scorer_layer=1"])
    return cfg, str(data), str(tok)


def test_bottleneck_task_builds_single_vector_model(task_args):
    from nugget_core.baselines import BottleneckModel, GatingLayer

    cfg, data, tok = task_args
    task = BaselineTask(MtDocuments(Path(data)), tok, "ae", cfg.nugget, cfg.model.seq2seq, deletion_noise=0.6, bottleneck="gating")
    model = task.build_model(None)
    assert isinstance(model, BottleneckModel)
    assert any(isinstance(m, GatingLayer) for m in model.modules())
    batch = task.collate(task.load_split("dev")[:4], step=0, rank=0, train=True)
    assert "boundary_mask" not in batch
    # TSDAE noise: training inputs lose tokens, labels keep the whole document
    assert batch["attention_mask"].sum() < (batch["labels"] != -100).sum()
    loss = task.loss(model, batch)
    assert torch.isfinite(loss)


def test_chunk_ablation_gets_punctuation_flags(task_args):
    cfg, data, tok = task_args
    from stages.nugget.nugget_task import NuggetTask

    nugget = dataclasses.replace(cfg.nugget, selector="chunk")
    task = NuggetTask(MtDocuments(Path(data)), tok, "mt", nugget, cfg.model.seq2seq)  # train_nugget and the ablations
    batch = task.collate(task.load_split("dev")[:4], step=0, rank=0, train=False)
    punct = {task.tokenizer().convert_tokens_to_ids(".")}
    assert batch["boundary_mask"].any()
    assert all(int(i) in punct for i in batch["input_ids"][batch["boundary_mask"]])
    model = task.build_model(None)
    nuggets = model.encode(batch["input_ids"], batch["attention_mask"], boundary_mask=batch["boundary_mask"])
    picked = batch["input_ids"].gather(1, nuggets.indices)[nuggets.mask.bool()]
    assert (picked == next(iter(punct))).float().mean() > 0.5  # chunks end on periods


def test_metric_names_escape_what_mlflow_refuses():
    from stages.artifacts.evaluate import metric_name

    assert metric_name("nugget2d 5x/accuracy") == "nugget2d 5x/accuracy"
    assert metric_name("token '.'/share_nuggets") == "token _x27_._x27_/share_nuggets"
    assert metric_name("token ','/x") != metric_name("token '?'/x")
