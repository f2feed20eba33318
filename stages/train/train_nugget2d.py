"""Stages ``train_nugget2d`` (compressor), ``train_nugget2d_ft`` (the compressor
fine-tuned on a task), ``train_nugget2d_ar`` (autoregressive LM) and ``train_nugget2d_ae``
(the autoencoding study of §4: autoencoders per ratio and their ICAE baseline).

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
  the paper (§2.5, cold start) it reuses a compressor's scorer, frozen (the autoencoding
  variant when trained, else ``train_nugget2d``'s model), and selects nuggets above the
  Lambda that ``calibrate_threshold`` calibrated on that scorer.

Variants: further models a stage trains in the same fit (`stages.train.sequence`: one
worker group, one model after another), published beside the main model:

- ``train_nugget2d``: a compressor at each ratio of ``train.nugget2d.extra_ratios``
  (paper: the 5x QA model is trained at r = 0.2) and, with ``train.nugget2d.ar_scorer:
  autoencoding``, the autoencoding compressor whose scorer the autoregressive model
  reuses (§2.5);
- ``train_nugget2d_ar``: the LM baselines of ``train.nugget2d_ar.baselines`` (Full,
  Compressive), trained with the autoregressive model's data, job and LoRA theta
  (§5.1: "the same configuration"; `stages.train.nugget2d_task.LMBaselineTask`);
- ``train_nugget2d_ae``: on the ``lm`` base LM (paper: LLaMA-7B on the Pile) with the
  job ``train.nugget2d_ae``, a Nugget2D autoencoder at each ratio of ``ratios`` (0.05,
  0.1; the first is the main model, the others ``r<ratio>``) and, with ``icae``, ICAE
  (Ge et al., 2023; `nugget_core.nugget2d.ICAEModel`) per ratio, ``icae_r<ratio>``, with
  ``ceil(ratio * max_doc_tokens)`` memory slots: the budget Nugget2D reaches on the
  longest training document, fixed for every length. All train the same way
  (`stages.train.autoencoding_task.AutoencodingTask`: same documents, length cuts, loss
  and optimiser); ``eval_nugget2d_ae`` reads them.

Output: `stages.artifacts.train.TrainedNugget2D`: ``nugget2d/``
(``nugget_core.nugget2d.save_nugget2d`` format: peft adapters, scorer, soft prompt,
config, tokenizer), the training objective and ratio, the variants under
``variants/<name>/nugget2d/`` (each with its ``trainer_state.json``);
``trainer_state.json``.
"""

from __future__ import annotations

import dataclasses
import json
import math
from typing import Any, ClassVar

from stages.artifacts.calibrate import CalibratedThreshold
from stages.artifacts.data import BaseLM, LMRecords
from stages.artifacts.train import TrainedNugget2D
from stages.framework.stage import Stage, StageContext
from stages.train.autoencoding_task import AutoencodingTask
from stages.train.launch import (
    check_resources,
    final_metrics,
    fit_sequence,
    train_into_stage_output,
)
from stages.train.loop import PROBE_FILE, STATE_FILE
from stages.train.model_card import document_models
from stages.train.nugget2d_task import LMBaselineTask, Nugget2DARTask, Nugget2DCompressorTask
from stages.train.storage import clear_storage, copy_tree

# train_nugget2d_ar reuses the compressor's scorer, the one calibrate_threshold calibrated
SCORER_STAGE = "train_nugget2d"
MAIN = "main"  # a stage's own model, beside its variants


@dataclasses.dataclass(frozen=True)
class Variant:
    task: Any  # a TrainingTask
    objective: str  # what trained.json records for it
    ratio: float
    base_role: str  # the prepare_lm base LM it trains on (BaseLM.ROLES)


class Nugget2DTrainingStage(Stage):
    job_key: ClassVar[str]
    base_role: ClassVar[str]  # the experiment's base LM (Nugget2D §3: LLaMA-2-7B-chat for QA / summaries)
    upstream = ("prepare_lm", "build_lm")
    resources = {"num_cpus": 0}  # the Ray Train workers take the CPUs
    run_name_keys = ("r=nugget2d.ratio",)
    expected_seconds = 200  # profile=tiny, 2 CPUs: orders ready stages (a run's own measurements replace it)

    def from_upstream(self, ctx: StageContext) -> dict[str, Any]:
        """Task fields taken from upstream artifacts (none: a fresh model)."""
        return {}

    def common(self, ctx: StageContext, job: Any, base_role: str = "") -> dict[str, Any]:
        """Fields of every Nugget2D task (on the stage's base LM, or ``base_role``'s)."""
        return dict(
            data=LMRecords.read(ctx.inputs["build_lm"]),
            base_dir=str(BaseLM.read(ctx.inputs["prepare_lm"], base_role or self.base_role).path),
            nugget2d=ctx.cfg("nugget2d"),
            attn_implementation=ctx.cfg("model.lm").attn_implementation,
            dev_examples=job.dev_examples,
            seed=ctx.cfg("run.seed"),
        )

    def task(self, ctx: StageContext, job: Any, objective: str = "", ratio: float | None = None,
             base_role: str = "") -> Nugget2DCompressorTask | Nugget2DARTask:
        """The compressor task of ``job`` (``objective`` / ``ratio`` / ``base_role``: a variant's)."""
        fields = self.common(ctx, job, base_role)
        if ratio is not None:
            fields["nugget2d"] = dataclasses.replace(fields["nugget2d"], ratio=ratio)
        return Nugget2DCompressorTask(
            objective=objective or job.objective,
            finetune_task=job.finetune_task,
            max_doc_tokens=job.max_doc_tokens,
            prompt_format=ctx.cfg("prompts").format,
            **fields,
            **self.from_upstream(ctx),
        )

    def variants(self, ctx: StageContext, job: Any) -> dict[str, Variant]:
        """Models trained beside the main one, by name (none by default)."""
        return {}

    def main_model(self, ctx: StageContext, job: Any) -> tuple[str, float]:
        """The objective and ratio of the stage's own model (recorded in ``trained.json``)."""
        return job.objective, ctx.cfg("nugget2d").ratio

    def run(self, ctx: StageContext) -> None:
        job = ctx.cfg(self.job_key)
        objective, ratio = self.main_model(ctx, job)
        finetune_task = getattr(job, "finetune_task", "") or ""
        variants = self.variants(ctx, job)
        if not variants:  # one model: one ordinary fit
            train_into_stage_output(ctx, self.task(ctx, job), job, self.job_key, TrainedNugget2D.DIR)
            TrainedNugget2D(TrainedNugget2D.folder(ctx.output_dir), objective, finetune_task,
                            ratio, base_role=self.base_role).write(ctx.output_dir)
            return
        check_resources(job, self.job_key)
        models = [(MAIN, self.task(ctx, job)), *((name, v.task) for name, v in variants.items())]
        print(f"[{self.name}] {len(models)} models in one fit: {MAIN} ({objective}, r={ratio:g}), "
              + ", ".join(f"{name} ({v.objective}, r={v.ratio:g})" for name, v in variants.items()), flush=True)
        if ctx.forced:  # never resume a forced recompute from an older attempt
            clear_storage(ctx.work_uri, "models")
        # one worker group trains them in turn (metrics under "<name>.")
        finished = fit_sequence(models, job, ctx.work_uri, "models", ctx.cfg("run.seed"), ctx.logger)
        records = {}
        for name, _ in models:
            main = name == MAIN
            dest = TrainedNugget2D.folder(ctx.output_dir) if main else TrainedNugget2D.variant_folder(ctx.output_dir, name)
            copy_tree(f"{finished[name]}/model", str(dest))
            copy_tree(f"{finished[name]}/{STATE_FILE}", str(dest.parent / STATE_FILE))
            ctx.log_metrics(final_metrics(json.loads((dest.parent / STATE_FILE).read_text()),
                                          prefix="" if main else name))
            if main:
                copy_tree(f"{finished[name]}/{PROBE_FILE}", str(ctx.output_dir / PROBE_FILE))
            else:
                v = variants[name]
                records[name] = {"dir": str(dest.relative_to(ctx.output_dir)), "objective": v.objective,
                                 "ratio": v.ratio, "base_role": v.base_role}
        clear_storage(ctx.work_uri, "models")
        tasks = dict(models)
        document_models(ctx, job, {
            TrainedNugget2D.folder(ctx.output_dir): tasks[MAIN],
            **{ctx.output_dir / r["dir"]: tasks[name] for name, r in records.items()}}, ctx.cfg("model.lm"))
        TrainedNugget2D(TrainedNugget2D.folder(ctx.output_dir), objective, finetune_task, ratio,
                        records, self.base_role).write(ctx.output_dir)


class TrainNugget2D(Nugget2DTrainingStage):
    name = "train_nugget2d"
    expected_seconds = 63  # profile=tiny: measured in a clean make run (2 CPUs, beside another stage)
    description = "Nugget2D compressors (autoencoding / continuation / finetune) on Ray Train."
    job_key = train_job = "train.nugget2d"
    base_role = "chat"  # the QA compressor (§6.2); its autoencoding variant trains on "lm"
    config_keys = ("nugget2d", "model.lm", "train.nugget2d", "prompts", "run.seed")

    @staticmethod
    def variant_specs(job: Any, ratio: float) -> dict[str, tuple[str, float]]:
        """The compressors trained beside the main one: name -> (objective, ratio)."""
        out = {TrainedNugget2D.ratio_name(r): (job.objective, r) for r in job.extra_ratios}
        if job.ar_scorer == TrainedNugget2D.AUTOENCODING and job.objective != TrainedNugget2D.AUTOENCODING:
            out[TrainedNugget2D.AUTOENCODING] = (TrainedNugget2D.AUTOENCODING, ratio)
        return out

    def variants(self, ctx: StageContext, job: Any) -> dict[str, Variant]:
        specs = self.variant_specs(job, ctx.cfg("nugget2d").ratio)
        # the autoencoding compressor lends its scorer to the AR model: the AR model's base LM
        role = {name: "lm" if name == TrainedNugget2D.AUTOENCODING else self.base_role for name in specs}
        return {name: Variant(self.task(ctx, job, objective, r, role[name]), objective, r, role[name])
                for name, (objective, r) in specs.items()}


class TrainNugget2DFT(Nugget2DTrainingStage):
    name = "train_nugget2d_ft"
    expected_seconds = 106  # profile=tiny: measured in a clean make run (2 CPUs, beside another stage)
    description = "train_nugget2d's compressor fine-tuned on a task (objective finetune) on Ray Train."
    job_key = train_job = "train.nugget2d_ft"
    base_role = "chat"
    upstream = ("prepare_lm", "build_lm", "train_nugget2d")
    config_keys = ("nugget2d", "model.lm", "train.nugget2d_ft", "prompts", "run.seed")

    def from_upstream(self, ctx: StageContext) -> dict[str, Any]:
        return {"init_dir": str(TrainedNugget2D.read(ctx.inputs["train_nugget2d"], "train_nugget2d").path)}


class TrainNugget2DAR(Nugget2DTrainingStage):
    name = "train_nugget2d_ar"
    expected_seconds = 61  # profile=tiny: measured in a clean make run (2 CPUs, beside another stage)
    description = "Autoregressive Nugget2D LM (compressor's scorer frozen, calibrated Lambda) on Ray Train."
    job_key = train_job = "train.nugget2d_ar"
    base_role = "lm"
    upstream = ("prepare_lm", "build_lm", SCORER_STAGE, "calibrate_threshold")
    config_keys = ("nugget2d", "model.lm", "train.nugget2d_ar", "run.seed")

    def task(self, ctx: StageContext, job: Any) -> Nugget2DARTask:
        if job.objective != "autoregressive":
            raise ValueError(f"train.nugget2d_ar.objective={job.objective!r}: this stage trains "
                             "objective autoregressive (compressor objectives: train_nugget2d)")
        return Nugget2DARTask(lm_corpus=job.lm_corpus, **self.common(ctx, job), **self.from_upstream(ctx))

    def variants(self, ctx: StageContext, job: Any) -> dict[str, Variant]:
        ratio = ctx.cfg("nugget2d").ratio  # Compressive pools chunks of round(1 / r), r the calibrated one
        return {system: Variant(LMBaselineTask(system=system, lm_corpus=job.lm_corpus, **self.common(ctx, job)),
                                system, ratio, self.base_role) for system in job.baselines}

    def from_upstream(self, ctx: StageContext) -> dict[str, Any]:
        calibrated = CalibratedThreshold.read(ctx.inputs["calibrate_threshold"])
        label, scorer = TrainedNugget2D.read(ctx.inputs[SCORER_STAGE], SCORER_STAGE).scorer_source()
        if calibrated.scorer_stage != label:
            raise ValueError(f"calibrate_threshold calibrated {calibrated.scorer_stage}'s scorer; "
                             f"train_nugget2d_ar reuses {label}'s")
        mine, theirs = (BaseLM.read(ctx.inputs["prepare_lm"], r).path for r in (self.base_role, scorer.base_role))
        if mine != theirs:  # the scorer reads the frozen layer-l features of the LM it runs in
            raise ValueError(f"{label}'s scorer was trained on the {scorer.base_role!r} base LM ({theirs.name}/), "
                             f"train_nugget2d_ar runs on {self.base_role!r} ({mine.name}/); set "
                             "train.nugget2d.ar_scorer: autoencoding (trained on the AR model's base LM)")
        return {"scorer_dir": str(scorer.path), "threshold": calibrated.threshold}


def icae_slots(ratio: float, max_doc_tokens: int) -> int:
    """ICAE's fixed memory at ``ratio``: Nugget2D's count on the longest document."""
    return max(math.ceil(ratio * max_doc_tokens - 1e-9), 1)


def icae_name(ratio: float) -> str:
    return f"{TrainedNugget2D.ICAE}_{TrainedNugget2D.ratio_name(ratio)}"


class TrainNugget2DAE(Nugget2DTrainingStage):
    name = "train_nugget2d_ae"
    expected_seconds = 132  # profile=tiny: measured in a clean make run (2 CPUs, beside another stage)
    description = "Nugget2D autoencoders per ratio and their ICAE baseline (Nugget2D §4) on Ray Train."
    job_key = train_job = "train.nugget2d_ae"
    base_role = "lm"  # Nugget2D §3: the autoencoding experiment uses LLaMA-7B, the LM (not the chat) model
    config_keys = ("nugget2d", "model.lm", "train.nugget2d_ae", "run.seed")
    run_name_keys = ("r=train.nugget2d_ae.ratios",)  # it trains one model per ratio

    def main_model(self, ctx: StageContext, job: Any) -> tuple[str, float]:
        return TrainedNugget2D.AUTOENCODING, job.ratios[0]

    def task(self, ctx: StageContext, job: Any, system: str = "nugget2d", ratio: float | None = None
             ) -> AutoencodingTask:  # type: ignore[override]
        ratio = job.ratios[0] if ratio is None else ratio
        fields = self.common(ctx, job)
        fields["nugget2d"] = dataclasses.replace(fields["nugget2d"], ratio=ratio)
        return AutoencodingTask(system=system, slots=icae_slots(ratio, job.max_doc_tokens) if system == "icae" else 0,
                                min_doc_tokens=job.min_doc_tokens, max_doc_tokens=job.max_doc_tokens, **fields)

    def variants(self, ctx: StageContext, job: Any) -> dict[str, Variant]:
        out = {TrainedNugget2D.ratio_name(r): Variant(self.task(ctx, job, "nugget2d", r), TrainedNugget2D.AUTOENCODING,
                                                      r, self.base_role) for r in job.ratios[1:]}
        if job.icae:
            out |= {icae_name(r): Variant(self.task(ctx, job, "icae", r), TrainedNugget2D.ICAE, r, self.base_role)
                    for r in job.ratios}
        return out
