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

import dataclasses
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from stages.config.job import TrainJob
    from stages.nugget.config import NuggetTrainJob, SweepSection


def training_budgets(nugget: NuggetTrainJob, sweep: SweepSection, baselines: TrainJob) -> dict[str, str]:
    """{training stage (a similarity record's ``source``): its job's stopping rule in words}
    for the sweep (``train.nugget`` with ``train.sweep.max_steps``), ``train_nugget``
    (``train.nugget``) and ``train_baselines`` (``train.baselines``). Equal text, equal
    budget (`TrainJob.stopping_rule`)."""
    # a sweep trial is train.nugget's job with its own step cap (stages/nugget/tune_grid.py)
    sweep_job = dataclasses.replace(nugget, max_steps=sweep.max_steps or nugget.max_steps)
    return {"sweep_nugget": sweep_job.stopping_rule(), "train_nugget": nugget.stopping_rule(),
            "train_baselines": baselines.stopping_rule()}
