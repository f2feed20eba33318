"""Several models trained one after another in one Ray Train fit (``train_baselines``).

Each fit pays a fixed cost before its first step (controller and worker processes,
imports, process group: about 20 s on 2 CPUs, benchmarks/fit_overhead.py), which a stage
training five small models one fit each paid five times. Here one worker group trains
them in turn; each model's training is exactly that of a fit of its own (the same
`stages.training.loop.train_task`, reseeded per model, so the same losses on the CPU).

Storage layout, under the fit's storage folder ``<storage>/<name>/``:

- Ray Train's checkpoints of the model being trained, each tagged with that model's name
  (``tag.txt``), so a restart resumes the model it belongs to and starts the next model
  afresh if the checkpoint is an earlier model's;
- ``finished/<model>/``: a finished model's final checkpoint files (``model/``, trainer
  state, probe logits), written by rank 0 before the final report, then
  ``finished/<model>/_DONE``. A restart (a worker failure, or a new attempt of the
  stage) skips every model whose ``_DONE`` exists, so a model is never trained twice
  and Ray Train's checkpoint rotation (``num_to_keep``) never deletes a finished model.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from stages.common.progress import progress_logger
from stages.training import session
from stages.training.loop import PROBE_FILE, STATE_FILE, TAG_FILE, train_task
from stages.training.storage import copy_tree, exists, write_text

log = progress_logger("nugget.train")

DONE = "_DONE"
FINAL_FILES = ("model", STATE_FILE, PROBE_FILE)


def finished_uri(storage: str, name: str, model: str) -> str:
    """Where the fit ``name`` keeps model ``model`` once trained."""
    return f"{storage}/{name}/finished/{model}"


def _publisher(uri: str):
    def publish(final: Path) -> None:
        for item in FINAL_FILES:  # straight from the checkpoint folder: one copy of the model
            copy_tree(str(final / item), f"{uri}/{item}")
        write_text(f"{uri}/{DONE}", "complete\n")  # last: the folder is whole

    return publish


def train_sequence_per_worker(config: dict[str, Any]) -> None:
    """Entry point given to ``TorchTrainer`` (or run in process, `stages.training.session`): ``config["models"]`` is a list of
    ``(name, task)``; every other key is as for `stages.training.loop.train_loop_per_worker`
    (``metric_prefix`` is each model's name; ``fail_at_step`` applies to the model named
    ``fail_in`` only)."""
    reporter = session.current()
    checkpoint = reporter.checkpoint()
    tag = None
    if checkpoint is not None:
        with checkpoint.as_directory() as d:
            tag_file = Path(d) / TAG_FILE
            tag = tag_file.read_text() if tag_file.exists() else None
    rank = reporter.rank()
    for k, (model, task) in enumerate(config["models"], 1):
        uri = finished_uri(config["storage"], config["name"], model)
        if exists(f"{uri}/{DONE}"):
            if rank == 0:
                log.info("[%s] %d/%d %s: finished earlier", config["name"], k, len(config["models"]), model)
            continue
        if rank == 0:  # through the training progress logger: a print reached the driver log twice
            log.info("[%s] %d/%d %s: training", config["name"], k, len(config["models"]), model)
        resume = checkpoint if tag == model else None
        own = {**config, "metric_prefix": model, "best_uri": f"{config['storage']}/{config['name']}/best/{model}",
               "fail_at_step": config.get("fail_at_step", 0) if config.get("fail_in") == model else 0}
        train_task(task, own, resume, on_final=_publisher(uri), tag=model)
