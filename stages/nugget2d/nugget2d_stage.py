"""What the Nugget2D training stages share: `Nugget2DTrainingStage`, the base class of
``train_nugget2d`` (`stages.nugget2d.train_nugget2d`), ``train_nugget2d_ft``
(`stages.nugget2d.train_nugget2d_ft`), ``train_nugget2d_ar`` (`stages.nugget2d.train_nugget2d_ar`)
and ``train_nugget2d_ae`` (`stages.nugget2d.train_nugget2d_ae`), and `Variant`, a model a
stage trains beside its own; `Nugget2DObjectiveStage` is the base of the three whose job
names their model's objective (``train_nugget2d_ar``: the autoregressive LM), and
`Nugget2DCompressorStage` the base of the two that train a compressor of that objective
(``train_nugget2d``, ``train_nugget2d_ft``). Each stage lives in a module of its own, so editing one
leaves its siblings' cache keys alone; this module is in all their import closures, so an
edit here re-keys all four, as it changes what each of them runs.

All four fit a Nugget2D model (one base LM from ``prepare_lm`` with two LoRA adapters, a
scorer on frozen layer-l features, a soft prompt) on Ray Train with the shared loop
(:mod:`stages.training.loop`): DDP or DeepSpeed ZeRO-2 (``train.<job>.backend``), Adam
with the paper's betas and a cosine schedule with warm-up (values in config), periodic
checkpoints with restart on worker failure, per-step loss / lr / tokens-per-second in
MLflow from rank 0.

Contract: each stage's header binds the base's type arguments, ``Nugget2DTrainingStage[
<Config>, <Inputs>]`` (its output is `TrainedNugget2D`): a config class whose fields
`Nugget2DSections` describes (the job section at the stage's own ``train.<job>`` path)
and an inputs class extending `Nugget2DInputs` (``prepare_lm``, ``build_lm``) with what
the stage starts from. `task`, `variants` and `main_model` build the models from those.

Variants: further models a stage trains in the same fit (`stages.training.sequence`: one
worker group, one model after another), published beside the main model; each stage's
module says which it trains.

Output: `stages.nugget2d.artifacts.TrainedNugget2D`: ``nugget2d/``
(``nugget_core.nugget2d.save_nugget2d`` format: peft adapters, scorer, soft prompt,
config, tokenizer), the training objective and ratio, the variants under
``variants/<name>/nugget2d/`` (each with its ``trainer_state.json``);
``trainer_state.json``.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, TypeVar

from stages.framework.contract import section_fields
from stages.framework.stage import Stage, StageContext
from stages.nugget2d.artifacts import LMRecords, PreparedLM, TrainedNugget2D
from stages.nugget2d.nugget2d_task import Nugget2DCompressorTask
from stages.training.launch import (
    check_resources,
    final_metrics,
    fit_sequence,
    train_into_stage_output,
)
from stages.training.loop import PROBE_FILE, STATE_FILE
from stages.training.model_card import document_models
from stages.training.storage import clear_storage, copy_tree

if TYPE_CHECKING:
    from nugget_core.nugget2d import Nugget2DConfig
    from stages.config.schema import CausalLM, PromptSection
    from stages.nugget2d.config import LMTrainJob, Nugget2DTrainJob
    from stages.training.task import TrainingTask

MAIN = "main"  # a stage's own model, beside its variants


class Nugget2DSections(Protocol):
    """What the config class of every Nugget2D training stage holds (each declares the
    fields with their `section` paths: its job is at its own ``train.<job>``)."""

    @property
    def nugget2d(self) -> Nugget2DConfig: ...  # ``nugget2d``

    @property
    def lm(self) -> CausalLM: ...  # ``model.lm``

    @property
    def job(self) -> LMTrainJob: ...  # ``train.<job>``, the stage's `job_key`

    @property
    def seed(self) -> int: ...  # ``run.seed``


class ObjectiveSections(Nugget2DSections, Protocol):
    """A config whose job names its model's objective."""

    @property
    def job(self) -> Nugget2DTrainJob: ...


class CompressorSections(ObjectiveSections, Protocol):
    """A compressor stage's config: its prompts lay out the fine-tuning tasks' inputs."""

    @property
    def prompts(self) -> PromptSection: ...  # ``prompts``


@dataclass(frozen=True)
class Nugget2DInputs:
    """What every Nugget2D training stage reads (a stage that starts from another model
    extends it)."""

    prepared: PreparedLM  # the base LMs (``prepare_lm``)
    records: LMRecords  # the training data (``build_lm``)


SectionsT = TypeVar("SectionsT", bound=Nugget2DSections)
ObjectiveT = TypeVar("ObjectiveT", bound=ObjectiveSections)
CompressorT = TypeVar("CompressorT", bound=CompressorSections)
InputsT = TypeVar("InputsT", bound=Nugget2DInputs)


@dataclasses.dataclass(frozen=True)
class Variant:
    task: TrainingTask
    objective: str  # what trained.json records for it
    ratio: float
    base_role: str  # the prepare_lm base LM it trains on (BaseLM.ROLES)


class Nugget2DTrainingStage(Stage[SectionsT, InputsT, TrainedNugget2D]):
    """A Nugget2D training stage on a ``SectionsT`` config (its job section at ``job_key``)
    and ``InputsT`` inputs: the task of its own model (`task`, recorded as `main_model`)
    and its `variants`, in one fit."""

    job_key: ClassVar[str]
    base_role: ClassVar[str]  # the experiment's base LM (Nugget2D §3: LLaMA-2-7B-chat for QA / summaries)
    resources = {"num_cpus": 0}  # the Ray Train workers take the CPUs

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """A stage binding the header fits the job its config reads: ``job_key`` (the
        section resources are checked against) is its config's ``job`` section."""
        super().__init_subclass__(**kwargs)
        if cls.config_class is None:  # a generic base: no config bound yet
            return
        paths = {f.name: f.path for f in section_fields(cls.config_class)}
        if paths.get("job") != getattr(cls, "job_key", None):
            raise TypeError(f"stage class {cls.__qualname__}: job_key {getattr(cls, 'job_key', None)!r} is not "
                            f"its config's job section {paths.get('job')!r}")

    def from_upstream(self, inputs: InputsT) -> dict[str, Any]:
        """Task fields taken from upstream outputs beyond the base LM and data (none: a fresh model)."""
        return {}

    def common(self, config: SectionsT, inputs: InputsT, base_role: str = "") -> dict[str, Any]:
        """Fields of every Nugget2D task (on the stage's base LM, or ``base_role``'s)."""
        return dict(
            data=inputs.records,
            base_dir=str(inputs.prepared.base(base_role or self.base_role).path),
            nugget2d=config.nugget2d,
            attn_implementation=config.lm.attn_implementation,
            dev_examples=config.job.dev_examples,
            seed=config.seed,
        )

    def task(self, config: SectionsT, inputs: InputsT) -> TrainingTask:
        """The task of the stage's own model."""
        raise NotImplementedError(f"{type(self).__name__} defines no task")

    def variants(self, config: SectionsT, inputs: InputsT) -> dict[str, Variant]:
        """Models trained beside the main one, by name (none by default)."""
        return {}

    def main_model(self, config: SectionsT) -> tuple[str, float]:
        """The objective and ratio of the stage's own model (recorded in ``trained.json``)."""
        raise NotImplementedError(f"{type(self).__name__} defines no main_model")

    def compute(self, ctx: StageContext, config: SectionsT, inputs: InputsT) -> None:
        job = config.job
        objective, ratio = self.main_model(config)
        finetune_task = getattr(job, "finetune_task", "") or ""
        variants = self.variants(config, inputs)
        if not variants:  # one model: one ordinary fit
            train_into_stage_output(ctx, self.task(config, inputs), job, self.job_key, TrainedNugget2D.DIR,
                                    config.seed, config.lm)
            TrainedNugget2D(TrainedNugget2D.folder(ctx.output_dir), objective, finetune_task,
                            ratio, base_role=self.base_role).write(ctx.output_dir)
            return
        check_resources(job, self.job_key)
        models = [(MAIN, self.task(config, inputs)), *((name, v.task) for name, v in variants.items())]
        print(f"[{self.name}] {len(models)} models in one fit: {MAIN} ({objective}, r={ratio:g}), "
              + ", ".join(f"{name} ({v.objective}, r={v.ratio:g})" for name, v in variants.items()), flush=True)
        if ctx.forced:  # never resume a forced recompute from an older attempt
            clear_storage(ctx.work_uri, "models")
        # one worker group trains them in turn (metrics under "<name>.")
        finished = fit_sequence(models, job, ctx.work_uri, "models", config.seed, ctx.logger)
        records, folders = {}, {}
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
                v, folders[name] = variants[name], dest
                records[name] = {"dir": str(dest.relative_to(ctx.output_dir)), "objective": v.objective,
                                 "ratio": v.ratio, "base_role": v.base_role}
        clear_storage(ctx.work_uri, "models")
        tasks = dict(models)
        document_models(ctx, job, {
            TrainedNugget2D.folder(ctx.output_dir): tasks[MAIN],
            **{folder: tasks[name] for name, folder in folders.items()}}, config.lm)
        TrainedNugget2D(TrainedNugget2D.folder(ctx.output_dir), objective, finetune_task, ratio,
                        records, self.base_role).write(ctx.output_dir)


class Nugget2DObjectiveStage(Nugget2DTrainingStage[ObjectiveT, InputsT]):
    """A Nugget2D stage whose job names its model's objective (``train.<job>.objective``),
    trained at ``nugget2d.ratio``."""

    def main_model(self, config: ObjectiveT) -> tuple[str, float]:
        return config.job.objective, config.nugget2d.ratio


class Nugget2DCompressorStage(Nugget2DObjectiveStage[CompressorT, InputsT]):
    """A stage whose own model is a compressor of its job's objective (`compressor_task`)."""

    def task(self, config: CompressorT, inputs: InputsT) -> TrainingTask:
        return self.compressor_task(config, inputs)

    def compressor_task(self, config: CompressorT, inputs: InputsT, objective: str = "", ratio: float | None = None,
                        base_role: str = "") -> Nugget2DCompressorTask:
        """The compressor task of the stage's job (``objective`` / ``ratio`` / ``base_role``: a variant's)."""
        job = config.job
        fields = self.common(config, inputs, base_role)
        if ratio is not None:
            fields["nugget2d"] = dataclasses.replace(fields["nugget2d"], ratio=ratio)
        return Nugget2DCompressorTask(
            objective=objective or job.objective,
            finetune_task=job.finetune_task,
            max_doc_tokens=job.max_doc_tokens,
            prompt_format=config.prompts.format,
            **fields,
            **self.from_upstream(inputs),
        )
