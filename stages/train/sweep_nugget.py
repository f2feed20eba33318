"""Stage ``sweep_nugget``: Ray Tune grid over r x l x objective for Nugget (paper §5.1, §7.1).

The grid is ``train.sweep`` (profile=paper: r in {0.05, 0.1, 0.15, 0.25}, l in
{0, 3, 6, 9}, AE and MT); every other setting is ``train.nugget`` / ``nugget``. Each
trial trains with the shared Ray Train loop and is one MLflow run nested under this
stage's run. Outputs: ``trials/<trial>/model/`` (loadable with
``NuggetModel.from_pretrained``), ``results.json`` / ``results.csv`` (one row per trial:
trial, objective, ratio, scorer_layer, dev_loss, final_train_loss, steps, model_dir) and
``best.json`` (lowest dev loss per objective). Run alone with ``python pipelines/sweep.py``.
"""

from __future__ import annotations

import csv

from stages.framework.stage import Stage, StageContext
from stages.train.launch import check_resources, clear_storage
from stages.train.train_nugget import nugget_task
from stages.train.tune_grid import copy_tree, run_sweep


class SweepNugget(Stage):
    name = "sweep_nugget"
    description = "Ray Tune grid over ratio x scorer layer x objective (Nugget)."
    upstream = ("tokenizer", "build_mt_docs")
    config_keys = ("nugget", "model.seq2seq", "train.nugget", "train.sweep", "run.seed")
    resources = {"num_cpus": 0}

    def run(self, ctx: StageContext) -> None:
        job, grid = ctx.cfg("train.nugget"), ctx.cfg("train.sweep")
        check_resources(job, "train.nugget")
        layers = ctx.cfg("model.seq2seq").tiny.layers
        if ctx.cfg("model.seq2seq").source == "tiny_random" and max(grid.scorer_layers) > layers:
            raise ValueError(f"train.sweep.scorer_layers: {grid.scorer_layers} exceeds model.seq2seq.tiny.layers={layers}")
        if ctx.forced:
            clear_storage(ctx.work_uri, "")
        client = ctx.logger.client
        tracking = {
            "tracking_uri": ctx.logger.tracking_uri,
            "experiment_id": client.get_run(ctx.logger.run_id).info.experiment_id,
            "parent_run_id": ctx.logger.run_id,
        }
        rows = run_sweep(nugget_task(ctx), job, grid, ctx.work_uri, ctx.cfg("run.seed"), tracking)
        for row in rows:
            dest = ctx.output_dir / "trials" / row["trial"] / "model"
            copy_tree(f"{ctx.work_uri}/trials/{row['trial']}/model", str(dest))
            row["model_dir"] = str(dest.relative_to(ctx.output_dir))
        best = {o: min((r for r in rows if r["objective"] == o), key=lambda r: r["dev_loss"])
                for o in sorted({r["objective"] for r in rows})}
        ctx.write_json("results.json", rows)
        ctx.write_json("best.json", best)
        with open(ctx.output_dir / "results.csv", "w", newline="") as fh:
            writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
        ctx.log_artifact(ctx.output_dir / "results.csv")
        ctx.log_metrics({"trials": len(rows), **{f"best_dev_loss.{o}": b["dev_loss"] for o, b in best.items()}})
        ctx.logger.set_tags({f"best_trial.{o}": b["trial"] for o, b in best.items()})
        clear_storage(ctx.work_uri, "")
