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

Output: ``nugget2d/`` (``nugget_core.nugget2d.save_nugget2d`` format: peft adapters,
scorer, soft prompt, config, tokenizer; reload with
``load_nugget2d(<out>/nugget2d, <prepare_lm>/model)``), ``trainer_state.json``.
"""

from __future__ import annotations

from typing import Any, ClassVar

from stages.calibrate.calibrate_threshold import SCORER_STAGE, read_threshold
from stages.framework.stage import Stage, StageContext
from stages.train.launch import train_into_stage_output
from stages.train.nugget2d_task import Nugget2DTask


class _TrainNugget2D(Stage):
    job_key: ClassVar[str]
    upstream = ("prepare_lm", "build_lm")
    resources = {"num_cpus": 0}  # the Ray Train workers take the CPUs

    def from_upstream(self, ctx: StageContext) -> dict[str, Any]:
        """`Nugget2DTask` fields taken from upstream artifacts (none: a fresh model)."""
        return {}

    def run(self, ctx: StageContext) -> None:
        job = ctx.cfg(self.job_key)
        task = Nugget2DTask(
            data_dir=str(ctx.inputs["build_lm"].path),
            base_dir=str(ctx.inputs["prepare_lm"].file("model")),
            objective=job.objective,
            nugget2d=ctx.cfg("nugget2d"),
            attn_implementation=ctx.cfg("model.lm").attn_implementation,
            finetune_task=job.finetune_task,
            max_doc_tokens=job.max_doc_tokens,
            # only stages whose objective may read task records declare (and key on) prompts
            prompt_format=ctx.cfg("prompts").format if "prompts" in self.config_keys else "inst",
            lm_corpus=job.lm_corpus,
            dev_examples=job.dev_examples,
            seed=ctx.cfg("run.seed"),
            **self.from_upstream(ctx),
        )
        train_into_stage_output(ctx, task, job, self.job_key, "nugget2d")


class TrainNugget2D(_TrainNugget2D):
    name = "train_nugget2d"
    description = "Nugget2D compressor (autoencoding / continuation / finetune) on Ray Train."
    job_key = "train.nugget2d"
    config_keys = ("nugget2d", "model.lm", "train.nugget2d", "prompts", "run.seed")


class TrainNugget2DFT(_TrainNugget2D):
    name = "train_nugget2d_ft"
    description = "train_nugget2d's compressor fine-tuned on a task (objective finetune) on Ray Train."
    job_key = "train.nugget2d_ft"
    upstream = ("prepare_lm", "build_lm", "train_nugget2d")
    config_keys = ("nugget2d", "model.lm", "train.nugget2d_ft", "prompts", "run.seed")

    def from_upstream(self, ctx: StageContext) -> dict[str, Any]:
        return {"init_dir": str(ctx.inputs["train_nugget2d"].file("nugget2d"))}


class TrainNugget2DAR(_TrainNugget2D):
    name = "train_nugget2d_ar"
    description = "Autoregressive Nugget2D LM (compressor's scorer frozen, calibrated Lambda) on Ray Train."
    job_key = "train.nugget2d_ar"
    upstream = ("prepare_lm", "build_lm", SCORER_STAGE, "calibrate_threshold")
    config_keys = ("nugget2d", "model.lm", "train.nugget2d_ar", "run.seed")

    def from_upstream(self, ctx: StageContext) -> dict[str, Any]:
        calibrated = read_threshold(ctx.inputs["calibrate_threshold"])
        if calibrated["scorer_stage"] != SCORER_STAGE:
            raise ValueError(f"calibrate_threshold calibrated {calibrated['scorer_stage']}'s scorer; "
                             f"train_nugget2d_ar reuses {SCORER_STAGE}'s")
        return {"scorer_dir": str(ctx.inputs[SCORER_STAGE].file("nugget2d")),
                "threshold": float(calibrated["lambda"])}
