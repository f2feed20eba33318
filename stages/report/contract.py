"""The report stage's contract (`stages.report.report.Report`'s header): the config
sections it reads and the upstream outputs it reads, in a module of their own because
its table builders (`stages.report.re_tables`) read them too.

The sections after ``eval`` are what the differences from the papers are checked against
(`stages.report.deviations`); every evaluation output is read with where it came from
(`stages.artifacts.base.Stored`: the tables name the artifact behind their numbers and
link its per-example outputs), and every training stage's output for the training
section (`stages.report.training`; its fields are named after their stages, in
`TRAINING_STAGES` order).

The evaluations a paper table names are fields of their own; every other registered stage
writing an `EvalTable` is collected into ``other_evaluations`` (`stages.framework.contract.collected`)
and shown as its own table (`stages.report.evaluation_tables`), so a new evaluation stage
reaches the report by its registry line alone.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from stages.artifacts.evaluate import EvalTable, StoredEvalTable
from stages.corpora.artifacts import StoredCorpusStatistics
from stages.framework.contract import collected, optional, produced_by, section
from stages.nugget.artifacts.models import (
    NuggetSweep,
    TrainedBaselines,
    TrainedNugget,
    TrainedNuggetLM,
)
from stages.nugget.artifacts.results import (
    StoredNuggetAnalysis,
    StoredReconstructionResults,
    StoredSimilarityResults,
)
from stages.nugget2d.artifacts import FullFinetunedLM, StoredCalibratedThreshold, TrainedNugget2D
from stages.restorable.artifacts import TrainedRestorable, TrainedRetrieval

if TYPE_CHECKING:
    from nugget_core import NuggetConfig
    from nugget_core.nugget2d import Nugget2DConfig
    from stages.config.evaluation import EvalSection
    from stages.config.job import TrainJob
    from stages.config.schema import CausalLM, REBaseModel, Seq2SeqModel
    from stages.nugget.config import (
        MTData,
        NuggetLMData,
        NuggetLMJob,
        NuggetTrainJob,
        PIData,
        RRData,
        SweepSection,
    )
    from stages.nugget2d.config import (
        FinetuneJob,
        LMData,
        Nugget2DAEJob,
        Nugget2DARJob,
        Nugget2DCompressorJob,
        Nugget2DTrainJob,
        ThresholdCalibration,
    )
    from stages.report.config import ReportSection
    from stages.restorable.config import (
        REData,
        REDownstreamData,
        RERetrievalData,
        RERetrievalJob,
        RETrainJob,
    )


@dataclass(frozen=True)
class ReportConfig:
    report: ReportSection = section("report")
    profile: str = section("profile")
    seq2seq: Seq2SeqModel = section("model.seq2seq")
    lm: CausalLM = section("model.lm")
    nugget: NuggetConfig = section("nugget")
    nugget2d: Nugget2DConfig = section("nugget2d")
    mt: MTData = section("data.mt")
    lm_data: LMData = section("data.lm")
    pi: PIData = section("data.pi")
    rr: RRData = section("data.rr")
    eval: EvalSection = section("eval")
    # what the differences from the papers are checked against (`stages.report.deviations`)
    train_nugget2d: Nugget2DCompressorJob = section("train.nugget2d")
    train_nugget2d_ae: Nugget2DAEJob = section("train.nugget2d_ae")
    train_nugget2d_ar: Nugget2DARJob = section("train.nugget2d_ar")
    train_nugget2d_ft: Nugget2DTrainJob = section("train.nugget2d_ft")
    train_full_ft: FinetuneJob = section("train.full_ft")
    nugget_lm_data: NuggetLMData = section("data.nugget_lm")
    threshold: ThresholdCalibration = section("calibrate.threshold")
    train_nugget_lm: NuggetLMJob = section("train.nugget_lm")
    re: REBaseModel = section("model.re")
    re_data: REData = section("data.re")
    train_re: RETrainJob = section("train.re")
    train_re_retrieval: RERetrievalJob = section("train.re_retrieval")
    re_retrieval_data: RERetrievalData = section("data.re_retrieval")
    re_downstream_data: REDownstreamData = section("data.re_downstream")
    train_nugget: NuggetTrainJob = section("train.nugget")
    sweep: SweepSection = section("train.sweep")
    train_baselines: TrainJob = section("train.baselines")


@dataclass(frozen=True)
class ReportInputs:
    corpus_stats: StoredCorpusStatistics = produced_by("corpus_stats")
    eval_similarity: StoredSimilarityResults = produced_by("eval_similarity")
    eval_reconstruction: StoredReconstructionResults = produced_by("eval_reconstruction")
    analyze_nuggets: StoredNuggetAnalysis | None = optional("analyze_nuggets")
    eval_lm: StoredEvalTable | None = optional("eval_lm")
    eval_qa: StoredEvalTable | None = optional("eval_qa")
    eval_summarization: StoredEvalTable | None = optional("eval_summarization")
    eval_nugget2d_ae: StoredEvalTable | None = optional("eval_nugget2d_ae")
    eval_nugget_lm: StoredEvalTable | None = optional("eval_nugget_lm")
    eval_re_restoration: StoredEvalTable | None = optional("eval_re_restoration")
    eval_re_retrieval: StoredEvalTable | None = optional("eval_re_retrieval")
    eval_re_downstream: StoredEvalTable | None = optional("eval_re_downstream")
    eval_efficiency: StoredEvalTable | None = optional("eval_efficiency")
    # Nugget2D's Lambda and its scores' histogram (`stages.report.figures`)
    calibrate_threshold: StoredCalibratedThreshold | None = optional("calibrate_threshold")
    # the training stages (`TRAINING_STAGES`, same order): their models' training summaries
    train_nugget: TrainedNugget | None = optional()
    sweep_nugget: NuggetSweep | None = optional()
    train_baselines: TrainedBaselines | None = optional()
    train_nugget_lm: TrainedNuggetLM | None = optional()
    train_nugget2d: TrainedNugget2D | None = optional()
    train_nugget2d_ft: TrainedNugget2D | None = optional("train_nugget2d_ft")
    train_nugget2d_ar: TrainedNugget2D | None = optional("train_nugget2d_ar")
    train_nugget2d_ae: TrainedNugget2D | None = optional("train_nugget2d_ae")
    train_full_ft: FullFinetunedLM | None = optional()
    train_re: TrainedRestorable | None = optional()
    train_re_retrieval: TrainedRetrieval | None = optional()
    # every other registered evaluation (an `EvalTable` no field above names), by stage name
    other_evaluations: Mapping[str, StoredEvalTable] = collected(EvalTable)
