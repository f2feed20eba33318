"""How ``eval_harness`` calls lm-evaluation-harness: which tasks (the local folder alone, or the
harness's registered tasks too), their request types, and one deterministic ``simple_evaluate``
of one model object. lm_eval is imported inside the functions, so importing this module (the
registry does, with the stage off too) needs no harness extra.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

EXTRA_HINT = "pip install -e '.[harness]'"


def harness_missing() -> str:
    """Why lm_eval cannot be imported here ("" when it can), found without importing it."""
    from importlib.util import find_spec

    return "" if find_spec("lm_eval") is not None else f"lm_eval is not installed; install the harness extra: {EXTRA_HINT}"


def task_manager(folder: Path, names: Sequence[str], local: Sequence[str]) -> Any:
    """lm_eval's TaskManager over the local task YAMLs in ``folder``; the harness's own task
    index too only when ``names`` holds a task that is not local (indexing every registered
    YAML takes seconds, and their datasets need the network)."""
    from lm_eval.tasks import TaskManager

    registered = [n for n in names if n not in local]
    return TaskManager(include_path=str(folder), include_defaults=bool(registered))


def request_types(names: Sequence[str], manager: Any) -> dict[str, set[str]]:
    """Per configured task name, the request types of its tasks (a group: of every task in it);
    a name the task manager does not know is a ValueError naming it."""
    from lm_eval.tasks import get_task_dict

    unknown = [n for n in names if n not in manager.all_tasks]
    if unknown:
        raise ValueError(f"eval.harness.tasks: {unknown} are neither local tasks nor tasks lm-evaluation-harness "
                         "registers (see lm_eval --tasks list)")

    def leaves(node: Any) -> list[Any]:
        if isinstance(node, Mapping):
            return [t for v in node.values() for t in leaves(v)]
        return [node]

    return {n: {t.OUTPUT_TYPE for t in leaves(get_task_dict([n], manager))} for n in names}


def evaluate(lm: Any, names: Sequence[str], manager: Any, *, num_fewshot: int, limit: int, bootstrap_iters: int,
             seed: int) -> dict[str, Any]:
    """``lm_eval.simple_evaluate`` of the model object ``lm`` on ``names``, the samples logged,
    every seed of the harness (Python, NumPy, torch, few-shot sampling) set to ``seed``."""
    from unittest import mock

    import lm_eval

    # lm_eval records the git commit of the working directory by running `git describe`, which in
    # a Ray job's working directory (uploaded without .git) prints git's "fatal: not a git
    # repository" into the stage's log; the stage's MLflow run records the pipeline's commit
    with mock.patch("lm_eval.evaluator.get_git_commit_hash", return_value=None):
        results = lm_eval.simple_evaluate(
            model=lm, tasks=list(names), task_manager=manager, num_fewshot=num_fewshot or None,
            limit=limit or None, bootstrap_iters=bootstrap_iters, log_samples=True, random_seed=seed,
            numpy_random_seed=seed, torch_random_seed=seed, fewshot_random_seed=seed)
    if results is None:  # simple_evaluate returns None on ranks > 0 of a distributed model only
        raise RuntimeError("lm_eval.simple_evaluate returned no results")
    return dict(results)
