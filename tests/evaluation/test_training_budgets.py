"""profile=paper's training budgets and batches, as the report's "Differences from the
papers' setups" checks them: DPR's negatives per query (RE app. B) and one stopping rule
for every system Nugget's tables 2 and 4 compare (Nugget app. B.1)."""

from __future__ import annotations

from typing import Any

from stages.config import load_config
from tests.evaluation.fixtures import deviations_of


def _paper(overrides: list[str]) -> Any:
    return load_config(["profile=paper", *overrides])


def _settings(cfg: Any) -> set[str]:
    return {d.setting for d in deviations_of(cfg)}


def test_retrieval_deviation_compares_negatives_per_query_not_batch_size():
    cfg = _paper([])
    job = cfg.train.re_retrieval
    assert job.batch_size * job.num_workers == 128 and job.negatives_per_query() == 255  # RE app. B
    assert "train.re_retrieval" not in _settings(cfg)
    # the same 128 queries per step over 2 workers of 64: still one global batch of 255 negatives
    assert "train.re_retrieval" not in _settings(_paper(["train.re_retrieval.num_workers=2",
                                                         "train.re_retrieval.batch_size=64"]))
    # batch 128 without the hard negative: 127 negatives per query, named
    no_hard = _paper(["train.re_retrieval.hard_negatives=0"])
    assert no_hard.train.re_retrieval.negatives_per_query() == 127
    assert "train.re_retrieval" in _settings(no_hard)
    # 128 queries per optimiser step through accumulation: 63 negatives per query, named
    assert "train.re_retrieval" in _settings(_paper(["train.re_retrieval.batch_size=16",
                                                     "train.re_retrieval.grad_accum=2"]))


def _budget(cfg: Any) -> str:
    (row,) = [d for d in deviations_of(cfg) if d.setting.startswith("training budgets of Nugget tables 2 / 4")]
    return row.here


def test_paper_profile_trains_every_table_2_and_4_system_to_one_stopping_rule():
    cfg = _paper([])
    nugget, sweep, baselines = cfg.train.nugget, cfg.train.sweep, cfg.train.baselines
    # Nugget app. B.1, every model "until convergence on the dev set": early stopping, the best weights kept
    assert sweep.max_steps is None  # the sweep's trials train with train.nugget's job
    assert nugget.stopping_rule() == baselines.stopping_rule()  # TSDAE, RE, the ablations and nugget_mt
    assert nugget.early_stopping_patience > 0 and nugget.export_model == baselines.export_model == "best_dev"
    assert _budget(cfg) == (
        "one rule for all: until 5 dev evaluations (every 2000 steps) without a lower loss, at most 200000 steps "
        "of 64 examples, dev loss on 256 dev examples, the best dev evaluation's weights")
    # a budget of its own for the baselines (the old 20k-step cap) or the sweep is named, with each rule
    capped = _budget(_paper(["train.baselines.max_steps=20000"]))
    assert "unequal budgets" in capped and "train.baselines: until 5 dev evaluations (every 2000 steps) " \
        "without a lower loss, at most 20000 steps" in capped
    assert "unequal budgets" in _budget(_paper(["train.sweep.max_steps=1000"]))
    assert "the last step's weights" in _budget(_paper(["train.baselines.export_model=final"]))
