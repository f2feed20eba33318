"""Training budgets of the Nugget systems the report compares (Nugget tables 2 and 4).

The similarity systems come from three training stages, each with its own job: the sweep
(``train.nugget`` with ``train.sweep.max_steps``), ``train_nugget`` (``train.nugget``) and
``train_baselines`` (``train.baselines``: TSDAE, RE and the table-4 ablations with their
reference ``nugget_mt``). A finding compares two systems only where they were trained with
the same budget: the same step cap, examples per step and stopping rule
(`stages.report.findings`), so a 200k-step sweep model is never set against a 20k-step
baseline when a same-budget reference exists.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

# the training stage of a similarity system (its record's ``source``) -> its job's config section
TRAINING_JOBS = {"sweep_nugget": "train.nugget", "train_nugget": "train.nugget", "train_baselines": "train.baselines"}


def training_budget(job: Any, max_steps: int) -> str:
    """What bounds a training run, in words: two runs with equal text had equal budgets."""
    examples = job.batch_size * job.num_workers * job.grad_accum
    stop = (f"early stopping after {job.early_stopping_patience} dev evaluations without improvement, one every "
            f"{job.eval_every} steps" if job.early_stopping_patience else "no early stopping")
    return f"at most {max_steps} steps of {examples} examples, {stop}"


def training_budgets(cfg: Callable[[str], Any]) -> dict[str, str]:
    """{training stage: its budget} for the stages of `TRAINING_JOBS` (``cfg``: the run's
    config, `StageContext.cfg`)."""
    sweep_steps = cfg("train.sweep").max_steps
    out = {stage: training_budget(cfg(section), cfg(section).max_steps) for stage, section in TRAINING_JOBS.items()}
    if sweep_steps is not None:
        out["sweep_nugget"] = training_budget(cfg("train.nugget"), sweep_steps)
    return out
