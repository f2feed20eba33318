"""Learning is visible: every fit of the shared loop evaluates its dev loss at step 0 (before
any update) and at its last step, logs both to MLflow on the step axis, and keeps the
step-0 value, the exported weights' dev loss and the tokens seen in its trainer state,
across a restart too; without Ray (its session faked), for both entry points (one model
per fit, several in sequence) and for every training task type."""

from __future__ import annotations

import json
import math
from pathlib import Path
from types import SimpleNamespace

import pytest

from stages.config.job import TrainJob
from stages.training.loop import STATE_FILE, train_loop_per_worker, train_task
from stages.training.sequence import finished_uri, train_sequence_per_worker
from tests.training.test_best_dev_export import LineTask, dev_loss_of
from tests.training.test_loop_logging import RecordingRunLogger

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
    assert logger.sizes[f"{prefix}eval/dev_loss_n"] == 4.0  # a sample size: a param, not a metric
    assert _values(logger, f"{prefix}eval/dev_loss_n") == {}
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

    import stages.training.loop as loop

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


# every training task type, as its stages build it (train_nugget / sweep_nugget: NuggetTask;
# train_baselines: BaselineTask; train_nugget2d / _ft: the compressor objectives; train_nugget2d_ar:
# the autoregressive model and its LM baselines; train_nugget2d_ae: Nugget2D and ICAE
# autoencoders; train_full_ft; train_nugget_lm; train_re; train_re_retrieval)
TASKS = ["nugget_ae", "baseline_gating", "nugget2d_continuation", "nugget2d_autoencoding", "nugget2d_finetune",
         "nugget2d_ar", "lm_baseline_compressive", "autoencoding_nugget2d", "autoencoding_icae", "full_ft",
         "nugget_lm", "restoration", "retrieval"]


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    return make_inputs(tmp_path_factory.mktemp("step0"))


def make_inputs(root: Path) -> SimpleNamespace:
    """Tiny data and base models for every task type (a few rows each), in ``root``."""
    import random

    import pyarrow as pa
    import pyarrow.parquet as pq
    from transformers import AutoTokenizer

    from stages.config import load_config
    from stages.nugget2d.lm_builders import summary_record
    from tests.evaluation.fixtures import _nugget
    from tests.lm_eval.fixtures import TEXTS, make_base_lm, make_tokenizer
    from tests.training.conftest import TINY
    from tests.training.fixtures import make_mt_artifacts
    from tests.training.test_nugget_lm_stages import write_corpus
    from tests.training.test_re_stages import write_texts

    mt, tok_dir = make_mt_artifacts(root, n_train=8, n_dev=4)
    ae = root / "ae"  # a Nugget AE: the start of the Nugget LMs and of the RE models
    _nugget(AutoTokenizer.from_pretrained(tok_dir), 0.25, 1, 0, ae)
    write_texts(root / "texts")
    write_corpus(root / "corpus", tok_dir)
    base = root / "base"
    make_base_lm(len(make_tokenizer(base))).save_pretrained(base)
    lm = root / "lm"
    lm.mkdir()
    rng = random.Random(0)
    doc = lambda n: [rng.randrange(5, 60) for _ in range(n)]  # noqa: E731
    splits = ["train"] * 4 + ["dev"] * 2
    pq.write_table(pa.Table.from_pylist([{"split": s, "doc": doc(12), "prompt": doc(3), "answer": doc(5)}
                                         for s in splits]), lm / "continuation.parquet")
    pq.write_table(pa.Table.from_pylist([{"split": s, "distant": doc(12), "recent": doc(6)} for s in splits]),
                   lm / "lm_pile.parquet")
    (lm / "summarization.jsonl").write_text("".join(
        json.dumps({"id": f"s{i}", "split": s, **summary_record(" ".join(TEXTS[i : i + 3]), TEXTS[i + 3])}) + "\n"
        for i, s in enumerate(splits)))
    return SimpleNamespace(cfg=load_config([*TINY, "nugget2d.lora_rank=4", "nugget2d.lora_alpha=4",
                                            "nugget2d.scorer_layer=1", "nugget2d.recent_window=6"]),
                           mt=mt, tok=str(tok_dir), ae=str(ae), texts=root / "texts", corpus=root / "corpus",
                           base=str(base), lm=lm)


def make_task(name: str, d: SimpleNamespace):
    from stages.nugget.artifacts.data import MtDocuments, NuggetLMCorpus
    from stages.nugget.artifacts.models import decoder_token_ids
    from stages.nugget.baseline_task import BaselineTask
    from stages.nugget.nugget_lm_task import NuggetLMTask
    from stages.nugget.nugget_task import NuggetTask
    from stages.nugget2d.artifacts import LMRecords
    from stages.nugget2d.autoencoding_task import AutoencodingTask
    from stages.nugget2d.full_ft_task import FullFinetuneTask
    from stages.nugget2d.nugget2d_task import LMBaselineTask, Nugget2DARTask, Nugget2DCompressorTask
    from stages.restorable.artifacts import RestorationTexts
    from stages.restorable.restoration_task import RestorableBase, RestorationTask
    from stages.restorable.retrieval_task import RetrievalExample, RetrievalTask
    from tests.lm_eval.fixtures import ADAPTER

    mt, lm, n2d = MtDocuments(d.mt), LMRecords(d.lm), d.cfg.nugget2d
    restorable = {"pooling": "mean", "decoder": "gating", "extra_layers": 0, "freeze_pretrained": False}
    if name == "nugget_ae":
        return NuggetTask(mt, d.tok, "ae", d.cfg.nugget, d.cfg.model.seq2seq)
    if name == "baseline_gating":
        return BaselineTask(mt, d.tok, "ae", d.cfg.nugget, d.cfg.model.seq2seq, bottleneck="gating")
    if name.startswith("nugget2d_") and name != "nugget2d_ar":
        return Nugget2DCompressorTask(lm, d.base, n2d, objective=name.removeprefix("nugget2d_"),
                                      finetune_task="summarization")
    if name == "nugget2d_ar":
        return Nugget2DARTask(lm, d.base, n2d, threshold=None)
    if name == "lm_baseline_compressive":
        return LMBaselineTask(lm, d.base, n2d, system="compressive")
    if name.startswith("autoencoding_"):
        system = name.removeprefix("autoencoding_")
        return AutoencodingTask(lm, d.base, n2d, system=system, slots=2 if system == "icae" else 0,
                                min_doc_tokens=8, max_doc_tokens=20)
    if name == "full_ft":
        return FullFinetuneTask(lm, d.base, "summarization", lora_rank=4, lora_alpha=4, **ADAPTER)
    if name == "nugget_lm":
        start, pad = decoder_token_ids(Path(d.ae))
        return NuggetLMTask(NuggetLMCorpus.read(d.corpus), d.tok, d.ae, memory="nugget", ratio=0.25, chunk_tokens=4,
                            segment_tokens=8, histories=[1], decoder_start_id=start, pad_id=pad, dev_examples=4)
    if name == "restoration":
        return RestorationTask(RestorableBase("stage_ae", d.ae), restorable, RestorationTexts.read(d.texts),
                               sentences=1)
    task = RetrievalTask(RestorableBase("stage_ae", d.ae), restorable, init="", data=None)
    rows = {"train": [RetrievalExample("the cat", "the cat sat", ("a dog ran",))] * 4,
            "dev": [RetrievalExample("a red mat", "it was a red mat", ("one big dog",))] * 2}
    task.load_split = rows.__getitem__  # build_re_retrieval's rows, without its files
    return task


@pytest.mark.parametrize("name", TASKS)
def test_every_task_type_logs_its_dev_loss_before_training(name, inputs, checkpoints):
    import torch

    torch.manual_seed(0)
    task = make_task(name, inputs)
    logger = RecordingRunLogger()
    job = TrainJob(max_steps=2, batch_size=2, lr=1e-3, eval_every=5, checkpoint_every=5, dev_examples=4)
    state = train_task(task, {"job": job, "logger": logger, "seed": 0}, None)
    dev = _values(logger, "eval/dev_loss")
    assert sorted(dev) == [0, 2]  # before any update, and the last step (no multiple of eval_every)
    assert dev[0] == state.initial_dev_loss and math.isfinite(state.initial_dev_loss)
    assert dev[2] == state.exported_dev_loss == state.dev_losses[-1]
    assert logger.sizes["eval/dev_loss_n"] == state.dev_loss_n > 0
    assert state.tokens_seen > 0
    saved = json.loads((checkpoints[-1] / STATE_FILE).read_text())  # what the stage exports beside the model
    assert (saved["initial_dev_loss"], saved["exported_dev_loss"], saved["tokens_seen"]) == (
        state.initial_dev_loss, state.exported_dev_loss, state.tokens_seen)
    # the input-use check ran and said why it measured nothing: 2-4 dev rows, or no compressed input
    # (tests/training/test_input_use.py measures it)
    assert saved["input_use"] is None and ("too few to tell" in saved["input_use_note"]
                                           or saved["input_use_note"].startswith("no compressed input"))
