"""train_nugget2d with variants (tiny random LLaMA, through the DAG): the compressors of
``train.nugget2d.extra_ratios`` and the autoencoding compressor of ``ar_scorer:
autoencoding`` are trained in the stage's one fit, each with its own objective and ratio,
and published beside the main model (Nugget2D §6.2: the 5x QA model is trained at
r = 0.2; §2.5: the autoregressive model reuses the autoencoding compressor's scorer)."""

from __future__ import annotations

import json
import random

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipelines.cli import main_full
from stages.framework.dag import Dag
from stages.framework.stage import Stage, StageContext
from stages.nugget2d.artifacts import BaseLM, LMRecords, TrainedNugget2D, scorer_fingerprint
from stages.nugget2d.train_nugget2d import TrainNugget2D
from tests.framework.fixtures import make_fake_sources, runs_of_latest_pipeline
from tests.lm_eval.fixtures import make_base_lm, make_tokenizer

pytestmark = [pytest.mark.ray, pytest.mark.slow]


class FakePrepareLM(Stage):
    name = "prepare_lm"
    config_keys = ("model.lm",)

    def run(self, ctx: StageContext) -> None:
        tok = make_tokenizer(BaseLM.folder(ctx.output_dir))
        make_base_lm(len(tok)).save_pretrained(BaseLM.folder(ctx.output_dir))


class FakeBuildLM(Stage):
    """continuation.parquet only: what the compressor objectives read."""

    name = "build_lm"
    upstream = ("prepare_lm",)

    def run(self, ctx: StageContext) -> None:
        rng = random.Random(0)
        doc = lambda n: [rng.randrange(5, 60) for _ in range(n)]  # noqa: E731
        rows = [{"split": s, "doc": doc(12), "prompt": doc(3), "answer": doc(5)} for s in ["train"] * 12 + ["dev"] * 4]
        pq.write_table(pa.Table.from_pylist(rows), LMRecords.continuation_file(ctx.output_dir))


ARGS = ["nugget2d.ratio=0.25", "nugget2d.scorer_layer=1", "nugget2d.lora_rank=4", "nugget2d.lora_alpha=4",
        "nugget2d.recent_window=6", "train.nugget2d.objective=continuation",
        "train.nugget2d.extra_ratios=[0.5]", "train.nugget2d.ar_scorer=autoencoding",
        *(f"train.nugget2d.{k}" for k in ("max_steps=3", "batch_size=4", "lr=5e-3", "eval_every=3",
                                          "checkpoint_every=3", "warmup_steps=0", "dev_examples=4"))]


def test_variants_are_trained_in_one_fit_and_published(ray_local, tmp_path):  # noqa: F811
    root = tmp_path / "artifacts"
    dag = Dag([FakePrepareLM, FakeBuildLM, TrainNugget2D])
    sources = make_fake_sources(tmp_path / "sources")
    assert main_full([f"run.artifact_root={root}", f"run.sources_dir={sources}", *ARGS], dag=dag) == 0
    (out,) = list((root / "train_nugget2d").iterdir())  # the fit's storage (.train-<key>) was removed
    (prepared,) = list((root / "prepare_lm").iterdir())
    base = BaseLM.read(prepared)

    trained = TrainedNugget2D.read(out)
    assert (trained.objective, trained.ratio) == ("continuation", 0.25)
    assert set(trained.variants) == {"r0.5", "autoencoding"}
    models = {"main": trained, "r0.5": trained.at_ratio(0.5), "autoencoding": trained.variant("autoencoding")}
    assert trained.at_ratio(0.25) is trained and trained.at_ratio(0.1) is None
    assert (models["r0.5"].objective, models["r0.5"].ratio) == ("continuation", 0.5)
    assert (models["autoencoding"].objective, models["autoencoding"].ratio) == ("autoencoding", 0.25)
    assert trained.scorer_source() == ("train_nugget2d/autoencoding", models["autoencoding"])
    loaded = {name: m.load(base) for name, m in models.items()}
    assert {name: m.config.ratio for name, m in loaded.items()} == {"main": 0.25, "r0.5": 0.5, "autoencoding": 0.25}
    # three trainings, three different scorers (each model trains its own from the same seed)
    assert len({scorer_fingerprint(m) for m in loaded.values()}) == 3
    for name in ("r0.5", "autoencoding"):
        state = json.loads((TrainedNugget2D.variant_folder(out, name).parent / "trainer_state.json").read_text())
        assert state["step"] == 3

    _, runs = runs_of_latest_pipeline(root)
    metrics = runs["train_nugget2d"].data.metrics
    assert metrics["steps"] == 3 and metrics["r0.5.steps"] == 3 and "autoencoding.best_dev_loss" in metrics
