"""Stages ``train_nugget2d`` (compressor) and ``train_nugget2d_ar`` (autoregressive LM).

Both fit a Nugget2D model (one base LM from ``prepare_lm`` with two LoRA adapters, a
scorer on frozen layer-l features, a soft prompt) on Ray Train with the shared loop
(:mod:`stages.training.loop`): DDP or DeepSpeed ZeRO-2 (``train.<job>.backend``), Adam
with the paper's betas and a cosine schedule with warm-up (values in config), periodic
checkpoints with restart on worker failure, per-step loss / lr / tokens-per-second in
MLflow from rank 0.

- ``train_nugget2d``: ``train.nugget2d.objective`` in autoencoding / continuation /
  finetune (``finetune_task`` qa or summarization);
- ``train_nugget2d_ar``: the autoregressive parallel approximation on LM segments.

Output: ``nugget2d/`` (``nugget_core.nugget2d.save_nugget2d`` format: peft adapters,
scorer, soft prompt, config, tokenizer; reload with
``load_nugget2d(<out>/nugget2d, <prepare_lm>/model)``), ``trainer_state.json``.
"""

from __future__ import annotations

from typing import ClassVar

from stages.framework.stage import Stage, StageContext
from stages.training.launch import train_into_stage_output
from stages.training.nugget2d_task import Nugget2DTask


class _TrainNugget2D(Stage):
    job_key: ClassVar[str]
    upstream = ("prepare_lm", "build_lm")
    code_modules = ("stages.train_nugget2d", "stages.training", "nugget_core")
    resources = {"num_cpus": 0}  # the Ray Train workers take the CPUs

    def run(self, ctx: StageContext) -> None:
        job = ctx.cfg(self.job_key)
        task = Nugget2DTask(
            data_dir=str(ctx.inputs["build_lm"].path),
            base_dir=str(ctx.inputs["prepare_lm"].file("model")),
            objective=job.objective,
            nugget2d=ctx.cfg("nugget2d"),
            attn_implementation=ctx.cfg("model.lm").attn_implementation,
            finetune_task=job.finetune_task,
            lm_corpus=job.lm_corpus,
            dev_examples=job.dev_examples,
            seed=ctx.cfg("run.seed"),
        )
        train_into_stage_output(ctx, task, job, self.job_key, "nugget2d")


class TrainNugget2D(_TrainNugget2D):
    name = "train_nugget2d"
    description = "Nugget2D compressor (autoencoding / continuation / finetune) on Ray Train."
    job_key = "train.nugget2d"
    config_keys = ("nugget2d", "model.lm", "train.nugget2d", "run.seed")


class TrainNugget2DAR(_TrainNugget2D):
    name = "train_nugget2d_ar"
    description = "Autoregressive Nugget2D LM (parallel approximation) on Ray Train."
    job_key = "train.nugget2d_ar"
    config_keys = ("nugget2d", "model.lm", "train.nugget2d_ar", "run.seed")
