"""What a checkpoint folder is and which ``nugget eval`` tasks it can be scored on.

The kind of a folder is read from the file that marks it (`stages.training.model_card.kind_of`,
the kinds the pipeline's model cards name), never from its path, so a folder copied anywhere is
recognised. A stage's output folder (``train_nugget/<key>/``) holding one model folder stands for
that model. Every failure is a `CommandError` of one line.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from pipelines.cli import EXIT_CONFIG
from pipelines.command import CommandError
from stages.training.model_card import KINDS, kind_of

#: The tasks of each model kind (`ModelKind.name`) ``nugget eval`` runs, the first the default
#: (Nugget2D: the task it was fine-tuned on, lm for an autoregressive model, else none).
TASKS: dict[str, tuple[str, ...]] = {
    "Nugget2D": ("qa", "summarization", "lm"),
    "Nugget": ("reconstruction", "pi", "rr"),
    "RE restorable embedding": ("restoration",),
}
USAGE_FILE = "usage.json"  # a Nugget2D folder's record of how it is used (`nugget_core.nugget2d`)
TRAINED_FILE = "trained.json"  # a training stage's record beside its model folder
SYSTEMS_FILE = "systems.json"  # a multi-system training stage's records (<out>/systems/<name>/model)


@dataclass(frozen=True)
class Checkpoint:
    """A model folder ``path`` of kind ``kind`` (`ModelKind.name`) and its tasks."""

    path: Path
    kind: str
    tasks: tuple[str, ...]
    default_task: str | None  # None: the kind has several tasks and the folder names none

    def record(self, name: str) -> dict:
        """The JSON record ``name`` of the folder or of the stage output holding it ({} if none)."""
        for folder in (self.path, self.path.parent):
            if (folder / name).is_file():
                try:
                    value = json.loads((folder / name).read_text())
                except json.JSONDecodeError as exc:
                    raise CommandError(EXIT_CONFIG, f"{folder / name}: not JSON ({exc})") from None
                return value if isinstance(value, dict) else {}
        return {}


    def system_record(self) -> dict:
        """The record of this model in its training stage's ``systems.json``
        (``<out>/systems/<name>/model``, e.g. train_re's), {} when there is none."""
        if len(self.path.parents) < 3 or not (self.path.parents[2] / SYSTEMS_FILE).is_file():
            return {}
        out = self.path.parents[2]
        try:
            records = json.loads((out / SYSTEMS_FILE).read_text())
        except json.JSONDecodeError as exc:
            raise CommandError(EXIT_CONFIG, f"{out / SYSTEMS_FILE}: not JSON ({exc})") from None
        here = self.path.resolve()
        return next((r for r in records if isinstance(r, dict) and "model_dir" in r
                     and (out / r["model_dir"]).resolve() == here), {})


def _markers() -> str:
    return ", ".join(k.marker for k in KINDS)


def _model_folder(path: Path) -> Path:
    """``path`` itself when it is a model folder, else its one model sub-folder."""
    if kind_of(path) is not None:
        return path
    inside = sorted(p for p in path.iterdir() if p.is_dir() and kind_of(p) is not None)
    if len(inside) == 1:
        return inside[0]
    if inside:
        raise CommandError(EXIT_CONFIG, f"{path} holds {len(inside)} model folders "
                           f"({', '.join(p.name for p in inside)}); pass one of them")
    systems = sorted(p.parent.relative_to(path).as_posix() for p in path.glob("systems/*/model")
                     if kind_of(p) is not None)
    if systems:  # a multi-system training stage's output (train_re, train_baselines)
        raise CommandError(EXIT_CONFIG, f"{path} holds {len(systems)} systems; pass one of their model folders, "
                           f"e.g. {path / systems[0] / 'model'} (all: {', '.join(s.split('/')[-1] for s in systems)})")
    raise CommandError(EXIT_CONFIG, f"{path} is not a checkpoint: no model folder marker ({_markers()}) "
                       "in it or in a sub-folder")


def identify(checkpoint: str) -> Checkpoint:
    """The checkpoint at ``checkpoint`` with the tasks of its kind; exit 2 when the path is
    missing, is no model folder, or holds a kind ``nugget eval`` has no task for."""
    path = Path(checkpoint).expanduser()
    if not path.exists():
        raise CommandError(EXIT_CONFIG, f"checkpoint {checkpoint}: no such file or folder")
    if not path.is_dir():
        raise CommandError(EXIT_CONFIG, f"checkpoint {checkpoint}: a file, not a model folder")
    folder = _model_folder(path)
    kind = kind_of(folder)
    assert kind is not None  # _model_folder returns model folders only
    tasks = TASKS.get(kind.name)
    if tasks is None:
        known = "; ".join(f"{name}: {', '.join(t)}" for name, t in TASKS.items())
        raise CommandError(EXIT_CONFIG, f"{folder} is a {kind.name} model folder, which nugget eval does not "
                           f"score (it scores {known})")
    found = Checkpoint(folder, kind.name, tasks, tasks[0] if kind.name != "Nugget2D" else None)
    if kind.name == "Nugget2D":  # a fine-tuned model records its task
        usage, trained = found.record(USAGE_FILE), found.record(TRAINED_FILE)
        named = usage.get("finetune_task") or trained.get("finetune_task")
        objective = usage.get("objective") or trained.get("objective")
        if named in tasks and objective == "finetune":
            found = Checkpoint(folder, kind.name, tasks, named)
        elif objective == "autoregressive":  # train_nugget2d_ar's model: eval_lm scores it
            found = Checkpoint(folder, kind.name, tasks, "lm")
    return found


def choose_task(checkpoint: Checkpoint, task: str | None) -> str:
    """``task``, or the checkpoint's default; exit 2 when it is not one of its kind's tasks."""
    if task is None:
        if checkpoint.default_task is None:
            raise CommandError(EXIT_CONFIG, f"{checkpoint.path} is a {checkpoint.kind} checkpoint: pass --task "
                               f"(one of {', '.join(checkpoint.tasks)})")
        return checkpoint.default_task
    if task not in checkpoint.tasks:
        raise CommandError(EXIT_CONFIG, f"--task {task}: {checkpoint.path} is a {checkpoint.kind} checkpoint, "
                           f"whose tasks are {', '.join(checkpoint.tasks)}")
    return task


def all_tasks() -> tuple[str, ...]:
    """Every task of every kind, for ``--task``'s choices."""
    return tuple(dict.fromkeys(t for tasks in TASKS.values() for t in tasks))
