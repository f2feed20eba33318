"""Ray Tune grid over Nugget's ratio r, scorer layer l and objective (Nugget §5.1, §7.1).

Each trial is a function trainable that fits its own ``TorchTrainer`` (Tune cannot wrap a
Train V2 trainer directly, docs/environment-notes.md) and holds no CPU itself, so concurrency is bounded
by ``max_concurrent_trials`` and the workers' CPUs, never deadlocked by trials waiting
for CPUs their parents hold. Every trial logs into its own MLflow run nested under the
sweep stage's run, and copies its final model to ``<work>/trials/<trial>/model``.
"""

from __future__ import annotations

import dataclasses
import tempfile
from typing import TYPE_CHECKING, Any

from stages.framework import quiet, sigterm
from stages.training.launch import fit
from stages.training.storage import copy_tree

if TYPE_CHECKING:
    from stages.framework.tracking import NestedRuns
    from stages.nugget.config import NuggetTrainJob, SweepSection
    from stages.nugget.nugget_task import NuggetTask


def trial_name(objective: str, ratio: float, layer: int) -> str:
    return f"{objective}_r{ratio:g}_l{layer}"


# what a trial reports to Tune and records in results.json (`NuggetSweep`): its trainer
# state's summary, with the dev loss before training (step 0) and of the exported weights
TRIAL_METRICS = ("dev_loss", "final_train_loss", "steps", "initial_dev_loss", "exported_dev_loss", "dev_loss_n",
                 "tokens_seen")


# and whether its exported weights read their input (the trainer state's, `stages.training.input_use`):
# not numbers (an object, or None with its note), so in the record only, not in the trial's MLflow metrics
TRIAL_INPUT_USE = ("input_use", "input_use_note")


def trial_metrics(state: dict[str, Any]) -> dict[str, float]:
    """A finished trial's `TRIAL_METRICS` from its trainer state (``dev_loss``: the best)."""
    return {"dev_loss": state["best_dev_loss"], "final_train_loss": state["losses"][-1], "steps": state["step"],
            "initial_dev_loss": state["initial_dev_loss"], "exported_dev_loss": state["exported_dev_loss"],
            "dev_loss_n": state["dev_loss_n"], "tokens_seen": state["tokens_seen"]}


def run_trial(config: dict[str, Any], base: dict[str, Any]) -> dict[str, Any]:
    """Train one grid point; returns its record (metrics and input use; also reported to Tune)."""
    from ray import tune

    # Tune stops the trial's actor with SIGTERM once it has reported; landing in a
    # finaliser, that printed a traceback (stages.framework.sigterm)
    sigterm.install()

    objective, ratio, layer = config["objective"], config["ratio"], config["scorer_layer"]
    name = trial_name(objective, ratio, layer)
    task = dataclasses.replace(
        base["task"],
        objective=objective,
        nugget=dataclasses.replace(base["task"].nugget, ratio=ratio, scorer_layer=layer),
    )
    job = dataclasses.replace(base["job"], objective=objective)
    if base.get("max_steps") is not None:  # a shorter budget per trial (train.sweep.max_steps)
        job = dataclasses.replace(job, max_steps=base["max_steps"])
    logger = None
    if base.get("runs") is not None:  # one MLflow run per trial, nested under the stage's
        logger = base["runs"].start(name, {"trial": name, "stage": "sweep_trial"})
        logger.log_params({"nugget.ratio": ratio, "nugget.scorer_layer": layer, "train.nugget.objective": objective})
    with tempfile.TemporaryDirectory(prefix="nugget-checkpoint-") as tmp:
        checkpoint, state = fit(task, job, base["storage"], f"train-{name}", base["seed"], logger,
                                download_to=tmp)
        copy_tree(str(checkpoint / "model"), f"{base['storage']}/trials/{name}/model")
    metrics = trial_metrics(state)
    if logger is not None:
        logger.log_metrics({**metrics, "final_train_loss_n": state.get("train_loss_n", 0)})
        logger.end()
    record = {**metrics, **{k: state.get(k) for k in TRIAL_INPUT_USE}}
    tune.report(record)
    return record


def run_sweep(task: NuggetTask, job: NuggetTrainJob, grid: SweepSection, storage: str, seed: int,
              runs: NestedRuns | None = None) -> list[dict[str, Any]]:
    """Fit every grid point; returns one row per trial (objective, ratio, layer, metrics).
    ``runs`` (a `stages.framework.tracking.NestedRuns`, or None) creates each trial's
    MLflow run."""
    from ray import tune

    base = {"task": task, "job": job, "storage": storage, "seed": seed, "runs": runs,
            "max_steps": grid.max_steps}
    # no CPU for the trial itself (its TorchTrainer workers take them); Tune needs some
    # non-empty request, so a token amount of memory
    trainable = tune.with_resources(tune.with_parameters(run_trial, base=base), {"cpu": 0, "memory": 1})
    tuner = tune.Tuner(
        trainable,
        param_space={
            "objective": tune.grid_search(list(grid.objectives)),
            "ratio": tune.grid_search(list(grid.ratios)),
            "scorer_layer": tune.grid_search(list(grid.scorer_layers)),
        },
        tune_config=tune.TuneConfig(max_concurrent_trials=grid.max_concurrent_trials),
        run_config=tune.RunConfig(name="tune", storage_path=storage, verbose=quiet.tune_verbosity()),
    )
    results = tuner.fit()
    rows = []
    for i in range(len(results)):  # ResultGrid is indexed (it defines no __iter__)
        result = results[i]
        if result.error is not None:
            raise RuntimeError(f"sweep trial {result.config} failed: {result.error}")
        c, metrics = result.config, result.metrics
        if c is None or metrics is None:  # a trial that ran without error has both
            raise RuntimeError(f"sweep trial {i} has no {'config' if c is None else 'metrics'}")
        rows.append({
            "trial": trial_name(c["objective"], c["ratio"], c["scorer_layer"]),
            "objective": c["objective"], "ratio": c["ratio"], "scorer_layer": c["scorer_layer"],
            **{k: metrics[k] for k in TRIAL_METRICS}, **{k: metrics.get(k) for k in TRIAL_INPUT_USE},
        })
    return sorted(rows, key=lambda r: (r["objective"], r["ratio"], r["scorer_layer"]))
