"""Stage ``train_nugget2d_ar``: the autoregressive parallel approximation on LM segments.
As in the paper (§2.5, cold start) it reuses a compressor's scorer, frozen (the
autoencoding variant when trained, else ``train_nugget2d``'s model), and selects nuggets
above the Lambda that ``calibrate_threshold`` calibrated on that scorer. How it trains
and what it writes: `stages.nugget2d.nugget2d_stage`.

Variants, trained in the same fit: the LM baselines of ``train.nugget2d_ar.baselines``
(Full, Compressive), with the autoregressive model's data, job and LoRA theta (§5.1: "the
same configuration"; `stages.nugget2d.nugget2d_task.LMBaselineTask`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from stages.framework.contract import produced_by, reading, section
from stages.nugget2d.artifacts import CalibratedThreshold, TrainedNugget2D
from stages.nugget2d.nugget2d_stage import Nugget2DInputs, Nugget2DObjectiveStage, Variant
from stages.nugget2d.nugget2d_task import LMBaselineTask, Nugget2DARTask

if TYPE_CHECKING:
    from nugget_core.nugget2d import Nugget2DConfig
    from stages.config.schema import CausalLM
    from stages.nugget2d.config import Nugget2DARJob

# train_nugget2d_ar reuses the compressor's scorer, the one calibrate_threshold calibrated
SCORER_STAGE = "train_nugget2d"


@dataclass(frozen=True)
class TrainNugget2DARConfig:
    nugget2d: Nugget2DConfig = section("nugget2d")
    lm: CausalLM = section("model.lm")
    job: Nugget2DARJob = section("train.nugget2d_ar")
    seed: int = section("run.seed")


@dataclass(frozen=True)
class TrainNugget2DARInputs(Nugget2DInputs):
    compressor: TrainedNugget2D = produced_by(SCORER_STAGE)  # its scorer (or its autoencoding variant's)
    calibrated: CalibratedThreshold = reading()  # the Lambda calibrated on that scorer


class TrainNugget2DAR(Nugget2DObjectiveStage[TrainNugget2DARConfig, TrainNugget2DARInputs]):
    name = "train_nugget2d_ar"
    job_key = train_job = "train.nugget2d_ar"
    base_role = "lm"

    def task(self, config: TrainNugget2DARConfig, inputs: TrainNugget2DARInputs) -> Nugget2DARTask:
        job = config.job
        if job.objective != "autoregressive":
            raise ValueError(f"train.nugget2d_ar.objective={job.objective!r}: this stage trains "
                             "objective autoregressive (compressor objectives: train_nugget2d)")
        return Nugget2DARTask(lm_corpus=job.lm_corpus, **self.common(config, inputs), **self.from_upstream(inputs))

    def variants(self, config: TrainNugget2DARConfig, inputs: TrainNugget2DARInputs) -> dict[str, Variant]:
        job = config.job
        ratio = config.nugget2d.ratio  # Compressive pools chunks of round(1 / r), r the calibrated one
        return {system: Variant(LMBaselineTask(system=system, lm_corpus=job.lm_corpus, **self.common(config, inputs)),
                                system, ratio, self.base_role) for system in job.baselines}

    def from_upstream(self, inputs: TrainNugget2DARInputs) -> dict[str, Any]:
        calibrated = inputs.calibrated
        label, scorer = inputs.compressor.scorer_source(SCORER_STAGE)
        if calibrated.scorer_stage != label:
            raise ValueError(f"calibrate_threshold calibrated {calibrated.scorer_stage}'s scorer; "
                             f"train_nugget2d_ar reuses {label}'s")
        mine, theirs = (inputs.prepared.base(r).path for r in (self.base_role, scorer.base_role))
        if mine != theirs:  # the scorer reads the frozen layer-l features of the LM it runs in
            raise ValueError(f"{label}'s scorer was trained on the {scorer.base_role!r} base LM ({theirs.name}/), "
                             f"train_nugget2d_ar runs on {self.base_role!r} ({mine.name}/); set "
                             "train.nugget2d.ar_scorer: autoencoding (trained on the AR model's base LM)")
        return {"scorer_dir": str(scorer.path), "threshold": calibrated.threshold}
