"""Stage ``train_baselines``: the baselines and ablations the Nugget evaluations compare.

Each name of ``eval.baselines.systems`` is one model, trained with the same MT documents
and tokenizer as ``train_nugget`` and the same job settings ``train.baselines``; one Ray
Train fit trains them in turn (`stages.training.sequence`: one worker group's fixed cost
instead of one per system; a restart skips the systems already finished):

========================  ==================================================================
tsdae_ae / tsdae_mt       TSDAE: mean-pooled single vector, cross-attention decoder; AE with
                          ``eval.baselines.tsdae_deletion`` deletion (paper: 60%) / MT
re_cross / re_gating      RE: single vector, cross-attention / gating decoder, AE, no noise
nugget_mt                 Nugget (MT), learned selector: the ablations' reference, trained
                          with the very same job settings (table 4, first row)
chunk / sentence          Nugget (MT) with the rule-based chunking / sentence-end selector
nugget_r0033              Nugget (MT) learned selector at the sentence selector's ratio
no_feedback               Nugget (MT) without the feedback type embeddings
nugget_ae_tgtlang /       Nugget AE / MT with the encoder on the corpus's other language
nugget_mt_tgtlang         (Chinese for en-zh; MT back to English): Nugget appendix D's nugget
                          tokens in other languages (analyze_nuggets), in no English table
========================  ==================================================================

Nugget ablations take every other Nugget setting (ratio 0.1 in the paper, scorer layer,
residual, ...) from the ``nugget`` section. Output: ``systems/<name>/model/`` (loadable
with ``NuggetModel`` / ``BottleneckModel.from_pretrained``), ``systems.json`` (one record
per system: what it is, its dev loss, its model dir) and per-system trainer states.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any

from stages.framework.contract import section
from stages.framework.stage import Stage, StageContext
from stages.nugget.artifacts.models import TrainedBaselines
from stages.nugget.baseline_task import BaselineTask
from stages.nugget.nugget_job import NuggetData
from stages.training.launch import check_resources, export_finished, final_metrics, fit_sequence
from stages.training.model_card import document_models
from stages.training.storage import clear_storage

if TYPE_CHECKING:
    from stages.config.job import TrainJob
    from stages.config.schema import NuggetSection, Seq2SeqModel
    from stages.nugget.config import BaselinesSection


@dataclass(frozen=True)
class SystemSpec:
    bottleneck: str  # "" (Nugget) | cross | gating
    objective: str
    noisy: bool = False  # TSDAE deletion noise
    selector: str = "topk"
    feedback: bool = True
    sentence_ratio: bool = False  # ratio = eval.baselines.sentence_ratio
    encoder_side: str = "source"  # "target": the encoder reads the corpus's other language

    def short(self) -> str:
        """For a log line: the fields that set this system apart (those off their default)."""
        off = {f.name: getattr(self, f.name) for f in fields(self) if getattr(self, f.name) != f.default}
        return ", ".join(f"{k}={'none' if v == '' else v}" for k, v in off.items())


SYSTEMS: dict[str, SystemSpec] = {
    "tsdae_ae": SystemSpec("cross", "ae", noisy=True),
    "tsdae_mt": SystemSpec("cross", "mt"),
    "re_cross": SystemSpec("cross", "ae"),
    "re_gating": SystemSpec("gating", "ae"),
    "nugget_mt": SystemSpec("", "mt"),
    "chunk": SystemSpec("", "mt", selector="chunk"),
    "sentence": SystemSpec("", "mt", selector="sentence", sentence_ratio=True),
    "nugget_r0033": SystemSpec("", "mt", sentence_ratio=True),
    "no_feedback": SystemSpec("", "mt", feedback=False),
    "nugget_ae_tgtlang": SystemSpec("", "ae", encoder_side="target"),
    "nugget_mt_tgtlang": SystemSpec("", "mt", encoder_side="target"),
}


def system_record(name: str, spec: SystemSpec, nugget: NuggetSection, deletion: float) -> dict[str, Any]:
    """What the evaluations need to know about a trained system (``systems.json``)."""
    record: dict[str, Any] = {
        "system": name, "objective": spec.objective, "deletion_noise": deletion,
        "kind": "bottleneck" if spec.bottleneck else "nugget",
        "model_dir": f"systems/{name}/model", "encoder_side": spec.encoder_side,
    }
    if spec.bottleneck:
        record["decoder"] = spec.bottleneck
    else:
        record.update(ratio=nugget.ratio, scorer_layer=nugget.scorer_layer,
                      selector=nugget.selector, feedback=nugget.feedback)
    return record


@dataclass(frozen=True)
class BaselinesConfig:
    baselines: BaselinesSection = section("eval.baselines")
    job: TrainJob = section("train.baselines")
    nugget: NuggetSection = section("nugget")
    seq2seq: Seq2SeqModel = section("model.seq2seq")
    seed: int = section("run.seed")


class TrainBaselines(Stage[BaselinesConfig, NuggetData, TrainedBaselines]):
    name = "train_baselines"
    external_models = ("model.seq2seq.name_or_path",)  # the pretrained base (source=pretrained)
    resources = {"num_cpus": 0}  # the Ray Train workers take the CPUs
    train_job = "train.baselines"  # the executor reserves its workers (one fit at a time)

    def compute(self, ctx: StageContext, config: BaselinesConfig, inputs: NuggetData) -> None:
        cfg, job = config.baselines, config.job
        check_resources(job, "train.baselines")
        tokenizer_dir = str(inputs.tokenizer.path)
        models, records = [], []
        for i, name in enumerate(cfg.systems):
            spec = SYSTEMS[name]
            # the section's fields are made at import (stages.config.derive): a type checker
            # knows none of them by name, so they are handed over as a mapping
            changes: dict[str, Any] = {
                "selector": spec.selector, "feedback": spec.feedback,
                "ratio": cfg.sentence_ratio if spec.sentence_ratio else config.nugget.ratio,
            }
            nugget = dataclasses.replace(config.nugget, **changes)
            deletion = cfg.tsdae_deletion if spec.noisy else 0.0
            print(f"[train_baselines] system {i + 1}/{len(cfg.systems)}: {name} ({spec.short()})", flush=True)
            models.append((name, BaselineTask(
                data=inputs.docs, tokenizer_dir=tokenizer_dir,
                objective=spec.objective, nugget=nugget, model=config.seq2seq,
                deletion_noise=deletion, dev_examples=job.dev_examples,
                seed=config.seed, bottleneck=spec.bottleneck, encoder_side=spec.encoder_side,
            )))
            records.append(system_record(name, spec, nugget, deletion))
        if ctx.forced:  # never resume a forced recompute from an older attempt
            clear_storage(ctx.work_uri, "baselines")
        # one worker group trains the systems in turn (per-step metrics under "<name>.")
        finished = fit_sequence(models, job, ctx.work_uri, "baselines", config.seed, ctx.logger)
        for record in records:
            name = record["system"]
            state = export_finished(finished[name], TrainedBaselines.system_dir(ctx.output_dir, name))
            record["dev_loss"] = state["best_dev_loss"]
            ctx.log_metrics(final_metrics(state, prefix=name))
        clear_storage(ctx.work_uri, "baselines")
        document_models(ctx, job, {TrainedBaselines.system_dir(ctx.output_dir, name) / "model": task
                                   for name, task in models})
        TrainedBaselines(ctx.output_dir, records).write(ctx.output_dir)
        ctx.log_metrics({"systems": len(records)})
