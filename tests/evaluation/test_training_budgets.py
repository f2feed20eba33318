"""profile=paper's training budgets and batches, as the report's "Differences from the
papers' setups" checks them: DPR's negatives per query (RE app. B) and one stopping rule
for every system Nugget's tables 2 and 4 compare (Nugget app. B.1)."""

from __future__ import annotations

from typing import Any

from stages.config import load_config
from stages.report.deviations import deviations


def _paper(overrides: list[str]) -> Any:
    return load_config(["profile=paper", *overrides])


def _settings(cfg: Any) -> set[str]:
    def get(key: str) -> Any:
        value = cfg
        for part in key.split("."):
            value = getattr(value, part)
        return value

    return {d.setting for d in deviations(get)}


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
