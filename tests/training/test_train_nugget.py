"""Nugget training on Ray Train: DDP and DeepSpeed ZeRO-2, checkpoints, exact resume."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import torch

from stages.config import ConfigError, load_config
from stages.nugget.artifacts.data import MtDocuments
from stages.nugget.nugget_task import NuggetTask, sentence_end_positions
from stages.training.launch import check_resources, fit
from stages.training.loop import PROBE_FILE, TrainerState, lr_at, record_dev_loss
from tests.training.conftest import TINY

pytestmark = pytest.mark.ray


def _task(cfg, data, tok) -> NuggetTask:
    job = cfg.train.nugget
    return NuggetTask(MtDocuments(Path(data)), str(tok), job.objective, cfg.nugget, cfg.model.seq2seq,
                      deletion_noise=job.deletion_noise, seed=0)


def _reload_matches_probe(checkpoint):
    from nugget_core import NuggetModel

    model = NuggetModel.from_pretrained(checkpoint / "model").eval()
    return model


@pytest.fixture(scope="module")
def ddp_run(ray_local, mt_artifacts, tmp_path_factory):
    data, tok = mt_artifacts
    cfg = load_config(TINY)
    storage = tmp_path_factory.mktemp("storage")
    checkpoint, state = fit(_task(cfg, data, tok), cfg.train.nugget, str(storage), "ddp", seed=0,
                            download_to=storage / "final")
    return cfg, checkpoint, state


def _assert_trained_and_reloads(cfg, data, tok, checkpoint, state):
    losses = state["losses"]
    assert len(losses) == 20 and state["step"] == 20
    assert sum(losses[-5:]) / 5 < 0.95 * sum(losses[:5]) / 5  # falling loss
    task = _task(cfg, data, tok)
    probe = task.collate(task.load_split("dev")[:8], step=-1, rank=0, train=False)
    model = _reload_matches_probe(checkpoint)
    with torch.no_grad():
        torch.testing.assert_close(task.logits(model, probe), torch.load(checkpoint / PROBE_FILE))


@pytest.mark.slow
def test_ddp_two_workers_trains_and_checkpoint_reloads(ddp_run, mt_artifacts):
    cfg, checkpoint, state = ddp_run
    _assert_trained_and_reloads(cfg, *mt_artifacts, checkpoint, state)
    assert sorted(p.name for p in checkpoint.glob("rng_rank*.pt")) == ["rng_rank0.pt", "rng_rank1.pt"]
    assert (checkpoint / "optimizer.pt").exists()


@pytest.mark.slow
def test_deepspeed_zero2_two_workers(ray_local, mt_artifacts, tmp_path):
    data, tok = mt_artifacts
    cfg = load_config(TINY + ["train.nugget.backend=deepspeed"])
    checkpoint, state = fit(_task(cfg, data, tok), cfg.train.nugget, str(tmp_path), "ds", seed=0,
                            download_to=tmp_path / "final")
    _assert_trained_and_reloads(cfg, data, tok, checkpoint, state)
    shards = sorted(p.name for p in (checkpoint / "ds").glob("*optim_states.pt"))
    assert len(shards) == 2  # ZeRO-2 optimiser shards from both ranks


@pytest.mark.slow
def test_injected_failure_resumes_exactly_in_one_mlflow_run(ddp_run, mt_artifacts, tmp_path):
    from stages.framework.tracking import Tracker
    from tests.framework.fixtures import runs_of_latest_pipeline  # noqa: F401

    cfg, _, uninterrupted = ddp_run
    data, tok = mt_artifacts
    tracker = Tracker(f"sqlite:///{tmp_path}/mlflow.db", "train-test", str(tmp_path / "mlartifacts"))
    logger = tracker.start_run("train_nugget", {"stage": "train_nugget"})
    checkpoint, state = fit(_task(cfg, data, tok), cfg.train.nugget, str(tmp_path / "storage"),
                            "crash", seed=0, logger=logger, fail_at_step=15,
                            download_to=tmp_path / "final")
    assert state["resumed_from_step"] == 10  # restarted from the step-10 checkpoint
    assert state["step"] == 20
    assert state["losses"] == uninterrupted["losses"]  # bit-exact continuation
    assert state["dev_losses"] == uninterrupted["dev_losses"]
    runs = tracker.client.search_runs([tracker.experiment_id])
    assert len(runs) == 1
    history = tracker.client.get_metric_history(logger.run_id, "train/loss")
    assert {m.step for m in history} == {5, 10, 15, 20}  # every log_every=5 steps, across the restart
    dev = tracker.client.get_metric_history(logger.run_id, "eval/dev_loss")
    assert {m.step for m in dev} == {0, 10, 20}  # the train loss's step axis, from before any update
    # the step-0 value survives the restart (kept in the checkpointed trainer state)
    assert [m.value for m in dev if m.step == 0] == [state["initial_dev_loss"]]
    assert state["initial_dev_loss"] == uninterrupted["initial_dev_loss"]
    assert state["tokens_seen"] == uninterrupted["tokens_seen"] > 0
    # a constant: a param (a sample size), logged once although the fit restarted
    assert tracker.client.get_metric_history(logger.run_id, "eval/dev_loss_n") == []
    assert int(tracker.client.get_run(logger.run_id).data.params["eval/dev_loss_n"]) > 0


def test_more_workers_than_cpus_fails_before_training(ray_local):
    cfg = load_config(TINY + ["train.nugget.num_workers=3"])
    with pytest.raises(ValueError, match=r"train.nugget.num_workers=3 needs 3 CPUs but the Ray cluster has 2"):
        check_resources(cfg.train.nugget, "train.nugget")


def test_pretrained_scorer_layer_too_deep_is_refused(mt_artifacts, tmp_path):
    from transformers import AutoTokenizer

    from nugget_core import TinyBartSpec, build_tiny_bart

    data, tok = mt_artifacts
    build_tiny_bart(AutoTokenizer.from_pretrained(tok), TinyBartSpec(layers=2)).save_pretrained(tmp_path)
    model = ["model.seq2seq.source=pretrained", f"model.seq2seq.name_or_path={tmp_path}"]
    # refused when the config loads, from the model's config.json, before anything runs
    with pytest.raises(ConfigError, match=r"nugget.scorer_layer: value 3 exceeds the 2 encoder layers of .*config.json"):
        load_config([*model, "nugget.scorer_layer=3"])
    cfg = load_config([*model, "nugget.scorer_layer=2"])
    cfg.nugget.scorer_layer = 3  # past the config check: the model build refuses it too
    with pytest.raises(ValueError, match="scorer_layer=3 exceeds the number of encoder layers"):
        _task(cfg, data, tok).build_model(None)


def test_lr_schedule():
    cfg = load_config(["train.nugget.lr=1.0", "train.nugget.warmup_steps=10",
                       "train.nugget.schedule=cosine", "train.nugget.max_steps=110"])
    job = cfg.train.nugget
    assert lr_at(0, job) == pytest.approx(0.1) and lr_at(9, job) == pytest.approx(1.0)
    assert lr_at(60, job) == pytest.approx(0.5) and lr_at(110, job) == pytest.approx(0.0)
    job.schedule = "linear"  # RE appendix A: linear decay after the warm-up
    assert lr_at(9, job) == pytest.approx(1.0) and lr_at(35, job) == pytest.approx(0.75)
    assert lr_at(110, job) == pytest.approx(0.0)


def test_sentence_end_positions_follow_offsets():
    text = "Hi there. Bye now."
    offsets = [(0, 0), (0, 2), (2, 8), (8, 9), (9, 13), (13, 17), (17, 18), (0, 0)]
    assert sentence_end_positions(text, ["Hi there.", "Bye now."], offsets) == [3, 6]


def test_early_stopping_counts_evaluations_without_improvement():
    state = TrainerState()
    for loss in (3.0, 2.0, 2.5, 2.0):  # best 2.0, then no strict improvement twice
        record_dev_loss(state, loss, patience=2)
    assert state.best_dev_loss == 2.0 and state.stopped_early
    off = TrainerState()
    for loss in (3.0, 4.0, 5.0, 6.0):
        record_dev_loss(off, loss, patience=0)
    assert not off.stopped_early and off.dev_losses == [3.0, 4.0, 5.0, 6.0]


def test_ae_objective_also_reads_the_english_only_documents(mt_artifacts, tmp_path):
    """build_mt_docs' train_ae.parquet (data.mt.ae_sources) adds AE training documents;
    MT training and every dev split ignore it."""
    import shutil

    import pyarrow as pa
    import pyarrow.parquet as pq

    from tests.training.fixtures import make_docs

    data, tok = mt_artifacts
    copy = tmp_path / "mt"
    shutil.copytree(data, copy)
    extra = [{**r, "target": r["source"]} for r in make_docs(5, 9)]
    pq.write_table(pa.Table.from_pylist(extra), MtDocuments.split_file(copy, MtDocuments.AE_SPLIT))
    counts = {}
    for objective in ("ae", "mt"):
        cfg = load_config(TINY + [f"train.nugget.objective={objective}"])
        task = _task(cfg, copy, tok)
        counts[objective] = (len(task.load_split("train")), len(task.load_split("dev")))
    base = len(pq.read_table(data / "train.parquet"))
    assert counts["ae"][0] == base + 5 and counts["mt"][0] == base
    assert counts["ae"][1] == counts["mt"][1]


def test_tsdae_noise_drops_whole_words_and_never_special_tokens():
    """TSDAE deletes words of the text; deleting subword tokens could also drop BOS / EOS
    and leave half words."""
    import numpy as np

    from stages.training.batches import delete_words

    ids = [0, 11, 12, 13, 14, 15, 2]  # <s> wo-rd1 word2 wo-rd3 </s>
    words = (None, 0, 0, 1, 2, 2, None)
    for seed in range(50):
        kept = delete_words(ids, words, 0.6, np.random.default_rng(seed))
        assert kept[0] == 0 and kept[-1] == 2  # special tokens stay
        assert (11 in kept) == (12 in kept) and (14 in kept) == (15 in kept)  # whole words
        assert len(kept) >= 3  # at least one word kept
    assert delete_words(ids, words, 0.0, np.random.default_rng(0)) == ids


def test_noisy_training_input_keeps_bos_and_eos(mt_artifacts):
    data, tok = mt_artifacts
    cfg = load_config(TINY)
    task = dataclasses.replace(_task(cfg, data, tok), deletion_noise=0.6)
    rows = task.load_split("train")[:8]
    assert all(len(r.words) == len(r.source) for r in rows)
    batch = task.collate(rows, step=3, rank=0, train=True)
    tokenizer = task.tokenizer()
    for ids, mask in zip(batch["input_ids"], batch["attention_mask"], strict=True):
        real = ids[mask.bool()].tolist()
        assert real[0] == tokenizer.bos_token_id and real[-1] == tokenizer.eos_token_id


class _SourceTargetTokenizer:
    """Stands in for mBART-50's tokenizer: source text starts with the source language
    code (250004, en_XX), target text (``text_target=``) with the target's (250025, zh_CN)."""

    class Encoding(dict):
        def word_ids(self, i: int) -> list[int | None]:
            return [None, 0]

    def __call__(self, text=None, text_target=None, **kwargs):
        if text_target is not None:
            return self.Encoding(input_ids=[[250025, 5] for _ in text_target])
        return self.Encoding(input_ids=[[250004, 5] for _ in text], offset_mapping=[[(0, 0), (0, 3)] for _ in text])


def test_labels_are_tokenised_as_targets(tmp_path):
    """MT labels carry the target language code, not the source's (text_target=)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    row = {"source": "Hi.", "target": "你好。", "source_sentences": ["Hi."]}
    pq.write_table(pa.Table.from_pylist([row]), MtDocuments.split_file(tmp_path, "train"))
    cfg = load_config(TINY)
    task = NuggetTask(MtDocuments(tmp_path), "unused", "mt", cfg.nugget, cfg.model.seq2seq)
    task._tok = _SourceTargetTokenizer()
    (example,) = task.load_split("train")
    assert example.source[0] == 250004 and example.target[0] == 250025


def test_target_side_encoder_reads_the_other_language(mt_artifacts, tmp_path):
    """encoder_side=target (Nugget app. D): the encoder reads the target column; AE
    reconstructs it, MT translates back to the source; the English-only AE documents and
    the sentence positions (recorded for the source side) are not used."""
    import shutil

    import pyarrow as pa
    import pyarrow.parquet as pq
    from transformers import AutoTokenizer

    from tests.training.fixtures import make_docs

    data, tok = mt_artifacts
    copy = tmp_path / "mt"
    shutil.copytree(data, copy)
    pq.write_table(pa.Table.from_pylist([{**r, "target": r["source"]} for r in make_docs(5, 9)]),
                   MtDocuments.split_file(copy, MtDocuments.AE_SPLIT))
    table = pq.read_table(copy / "train.parquet").to_pydict()
    tokenizer = AutoTokenizer.from_pretrained(tok)
    for objective, label_side in (("ae", "target"), ("mt", "source")):
        cfg = load_config(TINY + [f"train.nugget.objective={objective}"])
        task = NuggetTask(MtDocuments(copy), str(tok), objective, cfg.nugget, cfg.model.seq2seq,
                          seed=0, encoder_side="target")
        rows = task.load_split("train")
        assert len(rows) == len(table["source"])  # no English-only AE documents
        first = rows[0]
        assert first.source == tokenizer(table["target"][0], truncation=True,
                                         max_length=cfg.model.seq2seq.tiny.max_positions)["input_ids"]
        assert first.target == tokenizer(text_target=table[label_side][0], truncation=True,
                                         max_length=cfg.model.seq2seq.tiny.max_positions)["input_ids"]
        assert all(not r.boundaries for r in rows)
    with pytest.raises(ValueError, match="encoder_side 'left'"):
        NuggetTask(MtDocuments(copy), str(tok), "ae", cfg.nugget, cfg.model.seq2seq, encoder_side="left")
