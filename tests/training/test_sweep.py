"""The Ray Tune sweep stage over a 2 x 2 grid: 4 trials, 4 nested MLflow runs, a best
trial, and a model per trial."""

from __future__ import annotations

import json
import shutil

import pytest

from pipelines.cli import main_full
from stages.common.resampling import MIN_UNITS
from stages.framework.dag import Dag
from stages.framework.stage import Stage, StageContext
from stages.nugget.artifacts.models import NuggetSweep
from stages.nugget.sweep_nugget import SweepNugget
from tests.framework.fixtures import runs_of_latest_pipeline
from tests.training.conftest import TINY

pytestmark = [pytest.mark.ray, pytest.mark.slow]


class FixtureTokenizer(Stage):
    name = "tokenizer"
    config_keys = ("run.sources_dir",)

    def run(self, ctx: StageContext) -> None:
        from tests.training.fixtures import make_mt_artifacts

        _, tok = make_mt_artifacts(ctx.output_dir / "build", n_dev=MIN_UNITS)  # enough for the input-use interval
        shutil.copytree(tok, ctx.output_dir / "tokenizer")


class FixtureMTDocs(Stage):
    name = "build_mt_docs"
    upstream = ("tokenizer",)

    def run(self, ctx: StageContext) -> None:
        for split in ("train", "dev", "test"):
            shutil.copy(ctx.inputs["tokenizer"].path / "build" / "mt" / f"{split}.parquet", ctx.output_dir)


def test_sweep_two_by_two(ray_local, tmp_path):
    from mlflow.tracking import MlflowClient

    root = tmp_path / "artifacts"
    args = [f"run.artifact_root={root}", f"run.sources_dir={tmp_path}", *TINY,
            "train.nugget.num_workers=1", "train.nugget.max_steps=9", "train.nugget.eval_every=3",
            "train.nugget.checkpoint_every=6", "train.sweep.ratios=[0.1,0.5]",
            "train.sweep.scorer_layers=[0,1]", "train.sweep.objectives=[ae]",
            "train.sweep.max_concurrent_trials=2", "train.sweep.max_steps=6"]
    assert main_full(args, dag=Dag([FixtureTokenizer, FixtureMTDocs, SweepNugget])) == 0

    _, stages = runs_of_latest_pipeline(root)
    sweep_run = stages["sweep_nugget"]
    client = MlflowClient(f"sqlite:///{root}/mlflow.db")
    trials = client.search_runs([sweep_run.info.experiment_id],
                                filter_string=f"tags.mlflow.parentRunId = '{sweep_run.info.run_id}'")
    assert len(trials) == 4
    grid = {(float(t.data.params["nugget.ratio"]), int(t.data.params["nugget.scorer_layer"])) for t in trials}
    assert grid == {(0.1, 0), (0.1, 1), (0.5, 0), (0.5, 1)}
    assert all("dev_loss" in t.data.metrics and "train/loss" in t.data.metrics for t in trials)

    out = next((root / "sweep_nugget").iterdir())
    sweep = NuggetSweep.read(out)
    rows = sweep.trials
    assert len(rows) == 4 and all((sweep.model_dir(r) / "nugget_config.json").exists() for r in rows)
    assert all(r["steps"] == 6 for r in rows)  # train.sweep.max_steps overrides train.nugget's 9
    # each trial records its dev loss before training (step 0) and after, and the tokens it saw
    learned = sweep.training()
    assert [s.model for s in learned] == [f"sweep_nugget/{r['trial']}" for r in rows]
    assert all(s.steps == 6 and s.tokens_seen > 0 and s.dev_loss_n > 0 for s in learned)
    assert all(t.data.metrics["initial_dev_loss"] > 0 for t in trials)
    # and whether its exported weights read their input, over the dev documents (stages.training.input_use)
    assert all(s.input_use is not None and s.input_use.n == MIN_UNITS for s in learned)
    assert all("eval/input_use_own" in t.data.metrics and t.data.params["eval/input_use_n"] == str(MIN_UNITS)
               for t in trials)
    best = json.loads((out / "best.json").read_text())["ae"]  # the file the stage publishes
    assert best == sweep.best()["ae"]
    assert best["dev_loss"] == min(r["dev_loss"] for r in rows)
    assert sweep_run.data.tags["best_trial.ae"] == best["trial"]
    assert sweep_run.data.metrics["trials"] == 4
