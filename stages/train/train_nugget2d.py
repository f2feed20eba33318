"""Stages ``train_nugget2d`` (compressor), ``train_nugget2d_ft`` (the compressor
fine-tuned on a task) and ``train_nugget2d_ar`` (autoregressive LM).

All three fit a Nugget2D model (one base LM from ``prepare_lm`` with two LoRA adapters, a
scorer on frozen layer-l features, a soft prompt) on Ray Train with the shared loop
(:mod:`stages.train.loop`): DDP or DeepSpeed ZeRO-2 (``train.<job>.backend``), Adam
with the paper's betas and a cosine schedule with warm-up (values in config), periodic
checkpoints with restart on worker failure, per-step loss / lr / tokens-per-second in
MLflow from rank 0.

- ``train_nugget2d``: ``train.nugget2d.objective`` in autoencoding / continuation /
  finetune (``finetune_task`` qa or summarization);
- ``train_nugget2d_ft``: starts from ``train_nugget2d``'s model and fine-tunes it with
  objective ``finetune`` on ``train.nugget2d_ft.finetune_task`` (paper §6: "further
  fine-tune the model with triples sampled from the target task");
- ``train_nugget2d_ar``: the autoregressive parallel approximation on LM segments. As in
  the paper (§2.5, cold start) it reuses ``train_nugget2d``'s scorer, frozen, and selects
  nuggets above the Lambda that ``calibrate_threshold`` calibrated on that scorer.

Output: `stages.artifacts.train.TrainedNugget2D`: ``nugget2d/``
(``nugget_core.nugget2d.save_nugget2d`` format: peft adapters, scorer, soft prompt,
config, tokenizer) and the training objective; ``trainer_state.json``.
"""

from __future__ import annotations

from typing import Any, ClassVar

from stages.artifacts.calibrate import CalibratedThreshold
from stages.artifacts.data import BaseLM, LMRecords
from stages.artifacts.train import TrainedNugget2D
from stages.framework.stage import Stage, StageContext
from stages.train.launch import train_into_stage_output
from stages.train.nugget2d_task import Nugget2DARTask, Nugget2DCompressorTask

# train_nugget2d_ar reuses the compressor's scorer, the one calibrate_threshold calibrated
SCORER_STAGE = "train_nugget2d"


class _TrainNugget2D(Stage):
    job_key: ClassVar[str]
    upstream = ("prepare_lm", "build_lm")
    resources = {"num_cpus": 0}  # the Ray Train workers take the CPUs
    expected_seconds = 200  # profile=tiny, 2 CPUs: orders ready stages (a run's own measurements replace it)

    def from_upstream(self, ctx: StageContext) -> dict[str, Any]:
        """Task fields taken from upstream artifacts (none: a fresh model)."""
        return {}

    def common(self, ctx: StageContext, job: Any) -> dict[str, Any]:
        """Fields of both Nugget2D tasks."""
        return dict(
            data=LMRecords.read(ctx.inputs["build_lm"]),
            base_dir=str(BaseLM.read(ctx.inputs["prepare_lm"]).path),
            nugget2d=ctx.cfg("nugget2d"),
            attn_implementation=ctx.cfg("model.lm").attn_implementation,
            dev_examples=job.dev_examples,
            seed=ctx.cfg("run.seed"),
            **self.from_upstream(ctx),
        )

    def task(self, ctx: StageContext, job: Any) -> Nugget2DCompressorTask | Nugget2DARTask:
        return Nugget2DCompressorTask(
            objective=job.objective,
            finetune_task=job.finetune_task,
            max_doc_tokens=job.max_doc_tokens,
            prompt_format=ctx.cfg("prompts").format,
            **self.common(ctx, job),
        )

    def run(self, ctx: StageContext) -> None:
        job = ctx.cfg(self.job_key)
        train_into_stage_output(ctx, self.task(ctx, job), job, self.job_key, TrainedNugget2D.DIR)
        TrainedNugget2D(TrainedNugget2D.folder(ctx.output_dir), job.objective,
                        getattr(job, "finetune_task", "") or "").write(ctx.output_dir)


class TrainNugget2D(_TrainNugget2D):
    name = "train_nugget2d"
    description = "Nugget2D compressor (autoencoding / continuation / finetune) on Ray Train."
    job_key = train_job = "train.nugget2d"
    config_keys = ("nugget2d", "model.lm", "train.nugget2d", "prompts", "run.seed")


class TrainNugget2DFT(_TrainNugget2D):
    name = "train_nugget2d_ft"
    description = "train_nugget2d's compressor fine-tuned on a task (objective finetune) on Ray Train."
    job_key = train_job = "train.nugget2d_ft"
    upstream = ("prepare_lm", "build_lm", "train_nugget2d")
    config_keys = ("nugget2d", "model.lm", "train.nugget2d_ft", "prompts", "run.seed")

    def from_upstream(self, ctx: StageContext) -> dict[str, Any]:
        return {"init_dir": str(TrainedNugget2D.read(ctx.inputs["train_nugget2d"], "train_nugget2d").path)}


class TrainNugget2DAR(_TrainNugget2D):
    name = "train_nugget2d_ar"
    description = "Autoregressive Nugget2D LM (compressor's scorer frozen, calibrated Lambda) on Ray Train."
    job_key = train_job = "train.nugget2d_ar"
    upstream = ("prepare_lm", "build_lm", SCORER_STAGE, "calibrate_threshold")
    config_keys = ("nugget2d", "model.lm", "train.nugget2d_ar", "run.seed")

    def task(self, ctx: StageContext, job: Any) -> Nugget2DARTask:
        if job.objective != "autoregressive":
            raise ValueError(f"train.nugget2d_ar.objective={job.objective!r}: this stage trains "
                             "objective autoregressive (compressor objectives: train_nugget2d)")
        return Nugget2DARTask(lm_corpus=job.lm_corpus, **self.common(ctx, job))

    def from_upstream(self, ctx: StageContext) -> dict[str, Any]:
        calibrated = CalibratedThreshold.read(ctx.inputs["calibrate_threshold"])
        if calibrated.scorer_stage != SCORER_STAGE:
            raise ValueError(f"calibrate_threshold calibrated {calibrated.scorer_stage}'s scorer; "
                             f"train_nugget2d_ar reuses {SCORER_STAGE}'s")
        return {"scorer_dir": str(TrainedNugget2D.read(ctx.inputs[SCORER_STAGE], SCORER_STAGE).path),
                "threshold": calibrated.threshold}
