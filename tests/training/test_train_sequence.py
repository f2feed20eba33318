"""Several models in one Ray Train fit (`stages.training.sequence`) and the stage that uses
it (``train_baselines``): each model trains as in a fit of its own, a restart skips the
finished models and resumes the current one, the stage output is what evaluations read."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
import torch

from stages.config import load_config
from stages.nugget.artifacts.data import MtDocuments
from stages.nugget.nugget_task import NuggetTask
from stages.training.launch import fit, fit_sequence
from stages.training.loop import PROBE_FILE, STATE_FILE
from stages.training.sequence import DONE

pytestmark = pytest.mark.ray

STEPS = ["train.nugget.num_workers=1", "train.nugget.max_steps=10", "train.nugget.batch_size=8",
         "train.nugget.eval_every=5", "train.nugget.checkpoint_every=5", "train.nugget.log_every=5"]
SMALL = ["nugget.scorer_layer=1", "model.seq2seq.tiny.layers=2", "model.seq2seq.tiny.d_model=32",
         "model.seq2seq.tiny.ffn_dim=64"]


def _models(data, tok) -> tuple[object, list[tuple[str, NuggetTask]]]:
    cfg = load_config(SMALL + STEPS)
    job = cfg.train.nugget
    first = NuggetTask(MtDocuments(Path(data)), str(tok), job.objective, cfg.nugget, cfg.model.seq2seq, seed=0)
    second = dataclasses.replace(first, nugget=dataclasses.replace(cfg.nugget, ratio=0.5))
    return job, [("low", first), ("high", second)]


def _tracker(tmp_path: Path):
    from stages.framework.tracking import Tracker

    return Tracker(f"sqlite:///{tmp_path}/mlflow.db", "seq-test", str(tmp_path / "mlartifacts"))


def _state(uri: str) -> dict:
    return json.loads((Path(uri) / STATE_FILE).read_text())


@pytest.fixture(scope="module")
def uninterrupted(ray_local, mt_artifacts, tmp_path_factory):
    data, tok = mt_artifacts
    job, models = _models(data, tok)
    root = tmp_path_factory.mktemp("seq")
    tracker = _tracker(root)
    logger = tracker.start_run("seq", {})
    finished = fit_sequence(models, job, str(root / "storage"), "seq", seed=0, logger=logger)
    alone, state_alone = fit(models[1][1], job, str(root / "storage"), "alone", seed=0,
                             download_to=root / "alone")
    return tracker, logger, models, finished, state_alone


def test_each_model_of_a_sequence_trains_as_in_a_fit_of_its_own(uninterrupted):
    tracker, logger, models, finished, state_alone = uninterrupted
    assert set(finished) == {"low", "high"}
    for uri in finished.values():
        assert (Path(uri) / DONE).exists() and (Path(uri) / "model").is_dir()
        assert _state(uri)["step"] == 10
    # the second model starts from its own seed, not from the RNG the first one left
    assert _state(finished["high"])["losses"] == state_alone["losses"]
    assert _state(finished["low"])["losses"] != state_alone["losses"]
    # each model's export reproduces its own probe logits
    from nugget_core import NuggetModel

    for name, task in models:
        model = NuggetModel.from_pretrained(Path(finished[name]) / "model").eval()
        probe = task.collate(task.load_split("dev")[:8], step=-1, rank=0, train=False)
        with torch.no_grad():
            torch.testing.assert_close(task.logits(model, probe), torch.load(Path(finished[name]) / PROBE_FILE))
    # metrics of both models in the one run, under their names
    for name in ("low", "high"):
        history = tracker.client.get_metric_history(logger.run_id, f"{name}.train/loss")
        assert sorted(m.step for m in history) == [5, 10]


def test_a_restart_skips_finished_models_and_resumes_the_current_one(uninterrupted, mt_artifacts, tmp_path):
    _, _, _, clean, _ = uninterrupted
    data, tok = mt_artifacts
    job, models = _models(data, tok)
    tracker = _tracker(tmp_path)
    logger = tracker.start_run("seq", {})
    finished = fit_sequence(models, job, str(tmp_path / "storage"), "seq", seed=0, logger=logger,
                            fail_at_step=8, fail_in="high")
    high = _state(finished["high"])
    assert high["resumed_from_step"] == 5  # from the second model's own step-5 checkpoint
    assert high["losses"] == _state(clean["high"])["losses"]  # bit-exact continuation
    assert _state(finished["low"])["losses"] == _state(clean["low"])["losses"]
    # the first model was not trained again after the restart: each log step once
    history = tracker.client.get_metric_history(logger.run_id, "low.train/loss")
    assert sorted(m.step for m in history) == [5, 10]


def test_train_baselines_stage_writes_what_the_evaluations_read(ray_local, mt_artifacts, tmp_path):
    from stages.framework.keys import stage_sections
    from stages.framework.stage import Artifact, StageContext
    from stages.nugget.artifacts.models import TrainedBaselines
    from stages.nugget.systems import baseline_systems
    from stages.nugget.train_baselines import TrainBaselines

    data, tok = mt_artifacts
    overrides = SMALL + ["eval.baselines.systems=[re_gating,chunk]", "train.baselines.max_steps=4",
                         "train.baselines.eval_every=4", "train.baselines.checkpoint_every=4",
                         "train.baselines.dev_examples=8"]
    tracker = _tracker(tmp_path)
    logger = tracker.start_run("train_baselines", {})
    (tmp_path / "out").mkdir()
    ctx = StageContext("train_baselines", "k", stage_sections(TrainBaselines, load_config(overrides)),
                       {"build_mt_docs": Path(data), "tokenizer": Path(tok).parent}, tmp_path / "out",
                       logger, tmp_path, str(tmp_path / "work"))
    TrainBaselines().run(ctx)
    systems = baseline_systems(TrainedBaselines.read(Artifact("train_baselines", "k", "", ctx.output_dir, {})))
    assert [(s.name, s.kind) for s in systems] == [("baseline:re_gating", "bottleneck"), ("baseline:chunk", "nugget")]
    for s in systems:
        assert (s.model_dir / "config.json").exists() and s.dev_loss is not None
    record = {r["system"]: r for r in TrainedBaselines.read(ctx.output_dir).systems}
    assert record["chunk"]["selector"] == "chunk"
    assert json.loads((TrainedBaselines.system_dir(ctx.output_dir, "chunk") / STATE_FILE).read_text())["step"] == 4
    assert not (Path(ctx.work_uri) / "baselines").exists()  # checkpoints dropped
    metrics = tracker.client.get_run(logger.run_id).data.metrics
    assert metrics["systems"] == 2 and metrics["chunk.steps"] == 4
    # the dev loss before any update (step 0) and at the end, in MLflow and in the output's contract
    assert sorted(m.step for m in tracker.client.get_metric_history(logger.run_id, "re_gating.eval/dev_loss")) == [0, 4]
    learned = {s.model: s for s in TrainedBaselines.read(ctx.output_dir).training()}
    assert set(learned) == {"train_baselines/re_gating", "train_baselines/chunk"}
    assert learned["train_baselines/chunk"].dev_loss_before == metrics["chunk.initial_dev_loss"]
    assert all(s.steps == 4 and s.tokens_seen > 0 for s in learned.values())
