"""The ``train.*`` section: where each training job and the sweep sit. The job sections
themselves are their studies' (``stages/<study>/config.py``), built on `stages.config.job.TrainJob`;
see :mod:`stages.config.schema`."""

from __future__ import annotations

from dataclasses import dataclass

from stages.config.job import TrainJob
from stages.config.validate import spec
from stages.nugget.config import NuggetLMJob, NuggetTrainJob, SweepSection
from stages.nugget2d.config import (
    FinetuneJob,
    Nugget2DAEJob,
    Nugget2DARJob,
    Nugget2DCompressorJob,
    Nugget2DTrainJob,
)
from stages.restorable.config import RERetrievalJob, RETrainJob


@dataclass
class TrainSection:
    nugget: NuggetTrainJob = spec(NuggetTrainJob(), help="train_nugget stage (AE / MT).")
    nugget2d: Nugget2DCompressorJob = spec(Nugget2DCompressorJob(), help="train_nugget2d stage (compressors).")
    nugget2d_ar: Nugget2DARJob = spec(
        Nugget2DARJob(objective="autoregressive"), help="train_nugget2d_ar stage (and the LM baselines)."
    )
    nugget2d_ft: Nugget2DTrainJob = spec(
        Nugget2DTrainJob(objective="finetune", finetune_task="summarization"),
        help="train_nugget2d_ft stage: train_nugget2d's model fine-tuned on a task (objective finetune).",
    )
    nugget2d_ae: Nugget2DAEJob = spec(
        Nugget2DAEJob(), help="train_nugget2d_ae stage: autoencoding compressors per ratio and ICAE (Nugget2D §4).")
    full_ft: FinetuneJob = spec(
        FinetuneJob(finetune_task="summarization"),
        help="train_full_ft stage: the base LM fine-tuned on a task with one LoRA adapter (the Full FT baseline).",
    )
    baselines: TrainJob = spec(
        TrainJob(), help="train_baselines stage: every system of eval.baselines.systems (same data as Nugget)."
    )
    nugget_lm: NuggetLMJob = spec(NuggetLMJob(), help="train_nugget_lm stage (Nugget LM, Nugget table 3).")
    sweep: SweepSection = spec(SweepSection(), help="Ray Tune sweep over r and l.")
    re: RETrainJob = spec(RETrainJob(), help="train_re stage: the RE restoration models (RE tables 2, 3, 8).")
    re_retrieval: RERetrievalJob = spec(
        RERetrievalJob(), help="train_re_retrieval stage: DPR bi-encoders from the RE encoders (RE tables 4, 9).")
