"""Stage ``sweep_nugget``: Ray Tune grid over r x l x objective for Nugget (paper §5.1, §7.1).

The grid is ``train.sweep`` (profile=paper: r in {0.05, 0.1, 0.15, 0.25}, l in
{0, 3, 6, 9}, AE and MT); every other setting is ``train.nugget`` / ``nugget``. Each
trial trains with the shared Ray Train loop and is one MLflow run nested under this
stage's run. Outputs: ``trials/<trial>/model/`` (loadable with
``NuggetModel.from_pretrained``), ``results.json`` / ``results.csv`` (one row per trial:
trial, objective, ratio, scorer_layer, dev_loss, final_train_loss, steps, the dev loss
before training and of the exported weights, tokens seen, model_dir) and
``best.json`` (lowest dev loss per objective). Run alone with ``python pipelines/sweep.py``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from stages.framework.contract import section
from stages.framework.resources import Demand, worker_demand
from stages.framework.stage import Stage, StageContext
from stages.nugget.artifacts.models import NuggetSweep
from stages.nugget.nugget_job import NuggetData, nugget_task
from stages.nugget.tune_grid import run_sweep
from stages.training.launch import check_resources
from stages.training.model_card import document_models
from stages.training.storage import clear_storage, copy_tree

if TYPE_CHECKING:
    from stages.config.schema import NuggetSection, Seq2SeqModel
    from stages.nugget.config import NuggetTrainJob, SweepSection


@dataclass(frozen=True)
class SweepConfig:
    nugget: NuggetSection = section("nugget")
    seq2seq: Seq2SeqModel = section("model.seq2seq")
    job: NuggetTrainJob = section("train.nugget")
    grid: SweepSection = section("train.sweep")
    seed: int = section("run.seed")


class SweepNugget(Stage[SweepConfig, NuggetData, NuggetSweep]):
    name = "sweep_nugget"
    external_models = ("model.seq2seq.name_or_path",)  # the pretrained base (source=pretrained)
    resources = {"num_cpus": 0}

    @classmethod
    def demand(cls, sections: dict[str, Any]) -> Demand:
        """Concurrent trials x train.nugget's worker group (a trial itself holds no CPU)."""
        job, grid = sections["train.nugget"], sections["train.sweep"]
        trials = min(grid.max_concurrent_trials, len(grid.ratios) * len(grid.scorer_layers) * len(grid.objectives))
        return Demand(worker_demand(trials * job.num_workers, job.use_gpu),
                      lower="train.sweep.max_concurrent_trials or train.nugget.num_workers")

    def compute(self, ctx: StageContext, config: SweepConfig, inputs: NuggetData) -> None:
        job, grid = config.job, config.grid
        check_resources(job, "train.nugget")
        layers = config.seq2seq.tiny.layers
        if config.seq2seq.source == "tiny_random" and max(grid.scorer_layers) > layers:
            raise ValueError(f"train.sweep.scorer_layers: {grid.scorer_layers} exceeds model.seq2seq.tiny.layers={layers}")
        if ctx.forced:
            clear_storage(ctx.work_uri, "")
        task = nugget_task(inputs, job, config.nugget, config.seq2seq, config.seed)
        rows = run_sweep(task, job, grid, ctx.work_uri, config.seed, ctx.nested_runs())
        for row in rows:
            dest = NuggetSweep.trial_dir(ctx.output_dir, row["trial"])
            copy_tree(f"{ctx.work_uri}/trials/{row['trial']}/model", str(dest))
            row["model_dir"] = str(dest.relative_to(ctx.output_dir))
        # every trial's card names the sweep's base task (its own r / l / objective: `details`)
        document_models(ctx, job, {NuggetSweep.trial_dir(ctx.output_dir, r["trial"]): task for r in rows},
                        details={NuggetSweep.trial_dir(ctx.output_dir, r["trial"]): {"trial": r} for r in rows})
        sweep = NuggetSweep(ctx.output_dir, rows)
        sweep.write(ctx.output_dir)
        best = sweep.best()
        ctx.log_artifact(ctx.output_dir / "results.csv")
        # the n of best_dev_loss.<objective>: dev_loss_n in the best trial's nested run
        ctx.log_metrics({"trials": len(rows), **{f"best_dev_loss.{o}": b["dev_loss"] for o, b in best.items()}})
        ctx.set_tags({f"best_trial.{o}": b["trial"] for o, b in best.items()})
        clear_storage(ctx.work_uri, "")
