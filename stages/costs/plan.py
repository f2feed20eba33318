"""The cost plan of a run: each planned stage's estimate (`ESTIMATORS`, `CPU_STAGES`,
`NOT_ESTIMATED`) timed on a named device at its measured or assumed efficiency, and the
total. Config only: no model is loaded, nothing is imported from the benchmarks, Ray or
MLflow, so ``--dry-run`` stays instant.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from stages.costs import nugget, nugget2d, nugget2d_eval, restorable
from stages.costs.efficiency import DECODE, SCALING, TRAIN, Share, shares
from stages.costs.estimate import NONE, Rates, StageCost, Timed, cpu, not_estimated, timed
from stages.costs.peaks import Peaks, device_peaks, table_entry

if TYPE_CHECKING:
    from stages.config.schema import PipelineConfig

Estimator = Callable[["PipelineConfig"], StageCost]

ESTIMATORS: dict[str, Estimator] = {
    "train_nugget": nugget.train_nugget,
    "sweep_nugget": nugget.sweep_nugget,
    "train_baselines": nugget.train_baselines,
    "train_nugget_lm": nugget.train_nugget_lm,
    "eval_reconstruction": nugget.eval_reconstruction,
    "eval_similarity": nugget.eval_similarity,
    "eval_nugget_lm": nugget.eval_nugget_lm,
    "train_nugget2d": nugget2d.train_nugget2d,
    "train_nugget2d_ar": nugget2d.train_nugget2d_ar,
    "train_nugget2d_ae": nugget2d.train_nugget2d_ae,
    "train_nugget2d_ft": nugget2d.train_nugget2d_ft,
    "train_full_ft": nugget2d.train_full_ft,
    "calibrate_threshold": nugget2d.calibrate_threshold,
    "eval_lm": nugget2d.eval_lm,
    "eval_qa": nugget2d_eval.eval_qa,
    "eval_summarization": nugget2d_eval.eval_summarization,
    "eval_nugget2d_ae": nugget2d_eval.eval_nugget2d_ae,
    "eval_efficiency": nugget2d_eval.eval_efficiency,
    "train_re": restorable.train_re,
    "train_re_retrieval": restorable.train_re_retrieval,
    "eval_re_restoration": restorable.eval_re_restoration,
    "eval_re_retrieval": restorable.eval_re_retrieval,
}

#: Stages that run no model on a device: data building, tokenizers, statistics, the report.
CPU_STAGES: dict[str, str] = {
    "tokenizer": "BPE training or a pretrained tokenizer's files",
    "build_mt_docs": "data building", "build_pi": "data building and BM25 mining",
    "build_rr": "data building and BM25 mining", "build_lm": "data building",
    "build_nugget_lm": "data building", "build_re_data": "data building",
    "build_re_downstream": "data building", "build_re_retrieval": "data building",
    "prepare_lm": "converts / copies the base LM to an HF folder", "corpus_stats": "corpus statistics (Ray Data)",
    "report": "tables and figures from the evaluations' outputs",
}

#: Stages whose device work the config does not determine, and why.
NOT_ESTIMATED: dict[str, str] = {
    "eval_harness": "lm-evaluation-harness builds its requests (how many, how long, generate / loglikelihood / "
                    "rolling) from each task's data; neither count nor length is in the config",
    "analyze_nuggets": "the probability-gain probe's passes per document follow each document's nugget count "
                       "(figs. 7-8); its forward passes of the Nugget models are small next to their training",
    "eval_re_downstream": "encoder forwards over the sentence tasks' published splits (sizes not held here) and "
                          "a linear probe on CPU; small next to train_re",
}


def estimate(cfg: PipelineConfig, name: str) -> StageCost:
    """``name``'s cost under ``cfg`` (a stage without a cost model is said so)."""
    if name in ESTIMATORS:
        return ESTIMATORS[name](cfg)
    if name in CPU_STAGES:
        return cpu(name, CPU_STAGES[name])
    return not_estimated(name, NOT_ESTIMATED.get(name, "no cost model for this stage"), NONE)


@dataclass(frozen=True)
class CostPlan:
    device: str  # the DEVICE_PEAKS entry
    peaks: Peaks
    gpus: int
    train: Share
    decode: Share
    scaling: float
    stages: tuple[Timed, ...]

    @property
    def device_hours(self) -> float:
        return sum(t.device_hours for t in self.stages)

    @property
    def wall_hours(self) -> float:
        return sum(t.wall_hours for t in self.stages)


def cost_plan(cfg: PipelineConfig, names: Sequence[str], device: str, gpus: int = 1,
              results: Path | None = None) -> CostPlan:
    """Each of ``names`` (stage names, in plan order) costed on ``device`` (a name
    `stages.costs.peaks.table_entry` accepts; ``ValueError`` otherwise) and ``gpus`` of it."""
    if gpus < 1:
        raise ValueError(f"--gpus {gpus}: must be >= 1")
    entry = table_entry(device)
    found = shares(entry, results)
    rates = Rates(device_peaks(entry), found[TRAIN], found[DECODE], SCALING[0])
    stages = tuple(timed(estimate(cfg, n), rates, gpus) for n in names)
    return CostPlan(entry, rates.peaks, gpus, found[TRAIN], found[DECODE], SCALING[0], stages)
