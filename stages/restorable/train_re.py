"""Stage ``train_re``: the restoration models of the RE study (RE §3-4, tables 1-3, 8).

One model per sentence count (``train.re.sentence_counts``, texts of ``build_re_data``) x
encoder configuration of RE table 1 (``train.re.configs``: a = pretrained encoder
updated, b = frozen, c = updated + ``extra_layers`` new layers, d = frozen + new layers) x
pooling (``cls`` eq. 1, ``mean`` eq. 2) x decoder (``input`` / ``cross`` / ``gating``,
fig. 2) — beyond one sentence, with ``beyond_one_sentence=table3``, only RE table 3's
rows — each trained with eq. 6 on the train texts and the same job ``train.re``; one
Ray Train fit trains them in turn (`stages.training.sequence`). Every model starts from the
same pretrained encoder-decoder (``model.re``): on profile=tiny the tiny BART that
``train_nugget`` trained as an autoencoder (the only pretrained encoder-decoder offline),
on profile=paper T5-small as in RE §4.1.

Output (`stages.restorable.artifacts.TrainedRestorable`): ``systems.json`` (per system:
``sentences``, ``config``, ``pooling``, ``decoder``, ``freeze_pretrained``,
``extra_layers``, ``paper_row`` of RE table 8, ``base``, ``max_tokens`` (the texts' truncation),
``model_dir``, ``dev_loss``) and
``systems/<name>/model/`` (``RestorableModel.from_pretrained`` + tokenizer).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from stages.framework.contract import section
from stages.framework.stage import Stage, StageContext
from stages.nugget.artifacts.models import TrainedNugget
from stages.restorable.artifacts import RestorationTexts, TrainedRestorable
from stages.restorable.config import RE_CONFIGS
from stages.restorable.restoration_task import RestorationTask, restorable_base, token_limit
from stages.training.launch import check_resources, export_finished, final_metrics, fit_sequence
from stages.training.model_card import document_models
from stages.training.storage import clear_storage

if TYPE_CHECKING:
    from stages.config.schema import REBaseModel
    from stages.restorable.config import RETrainJob

# RE table 3: the rows the paper reports for 1, 3 and 5 sentences alike
TABLE3 = {"configs": ("c", "d"), "poolings": ("mean",), "decoders": ("cross", "gating")}


def re_systems(job: RETrainJob) -> list[dict[str, Any]]:
    """The grid of ``train.re`` as records (without the training results), in training order;
    beyond one sentence only RE table 3's rows with ``beyond_one_sentence=table3``."""
    out = []
    for k in job.sentence_counts:
        def keep(axis: str, values: list[str], k: int = k) -> list[str]:
            cut = k > 1 and job.beyond_one_sentence == "table3"
            return [v for v in values if v in TABLE3[axis]] if cut else list(values)

        for config in keep("configs", job.configs):
            freeze, extra = RE_CONFIGS[config]
            for pooling in keep("poolings", job.poolings):
                for decoder in keep("decoders", job.decoders):
                    out.append({
                        "system": f"n{k}_{config}_{pooling}_{decoder}", "sentences": k, "config": config,
                        "pooling": pooling, "decoder": decoder, "freeze_pretrained": freeze,
                        "extra_layers": job.extra_layers if extra else 0,
                        "paper_row": f"{k}|{config}|{pooling}|{decoder}",
                    })
    return out


def restorable_fields(spec: dict[str, Any], job: RETrainJob) -> dict[str, Any]:
    """`nugget_core.restorable.RestorableConfig`'s fields of one system of `re_systems`."""
    return {"pooling": spec["pooling"], "decoder": spec["decoder"], "repr_dim": job.repr_dim or None,
            "extra_layers": spec["extra_layers"], "freeze_pretrained": spec["freeze_pretrained"],
            "freeze_encoder_embedding": job.freeze_encoder_embedding}


@dataclass(frozen=True)
class TrainREConfig:
    job: RETrainJob = section("train.re")
    model: REBaseModel = section("model.re")
    seed: int = section("run.seed")
    # what config_errors checks the grid and the base against
    nugget_objective: str = section("train.nugget.objective")
    sentence_counts: list[int] = section("data.re.sentence_counts")


@dataclass(frozen=True)
class TrainREInputs:
    texts: RestorationTexts
    # the pretrained encoder-decoder of profile=tiny (model.re.source=stage_ae); with
    # source=pretrained it is read but unused: it stays an input (upstreams are static)
    nugget: TrainedNugget


class TrainRE(Stage[TrainREConfig, TrainREInputs, TrainedRestorable]):
    name = "train_re"
    external_models = ("model.re.name_or_path",)
    resources = {"num_cpus": 0}  # the Ray Train workers take the CPUs
    train_job = "train.re"

    @classmethod
    def config_errors(cls, sections: dict[str, Any]) -> list[str]:
        found = []
        built = sections["data.re.sentence_counts"]
        missing = [k for k in sections["train.re"].sentence_counts if k not in built]
        if missing:
            found.append(f"train.re.sentence_counts: {missing} are not in data.re.sentence_counts={built}")
        if sections["model.re"].source == "stage_ae" and sections["train.nugget.objective"] != "ae":
            found.append(f"model.re.source: stage_ae starts from train_nugget's model, which is "
                         f"{sections['train.nugget.objective']!r}, not an autoencoder; set train.nugget.objective=ae "
                         "or model.re.source=pretrained")
        return found

    def compute(self, ctx: StageContext, config: TrainREConfig, inputs: TrainREInputs) -> None:
        job = config.job
        check_resources(job, "train.re")
        base = restorable_base(config.model, inputs.nugget)
        specs = re_systems(job)
        from transformers import AutoConfig

        limit = token_limit(AutoConfig.from_pretrained(base.path, trust_remote_code=False), job.max_tokens)
        models = []
        for i, spec in enumerate(specs, 1):
            print(f"[train_re] system {i}/{len(specs)}: {spec['system']} ({spec['sentences']} sentences, config "
                  f"{spec['config']}, {spec['pooling']} pooling, {spec['decoder']} decoder)", flush=True)
            models.append((spec["system"], RestorationTask(
                base=base, restorable=restorable_fields(spec, job),
                data=inputs.texts, sentences=spec["sentences"],
                max_tokens=job.max_tokens, dev_examples=job.dev_examples, seed=config.seed,
            )))
        if ctx.forced:  # never resume a forced recompute from an older attempt
            clear_storage(ctx.work_uri, "re")
        finished = fit_sequence(models, job, ctx.work_uri, "re", config.seed, ctx.logger)
        records = []
        for spec in specs:
            name = spec["system"]
            state = export_finished(finished[name], TrainedRestorable.system_dir(ctx.output_dir, name))
            records.append({**spec, "base": base.describe(), "max_tokens": limit, "model_dir": f"systems/{name}/model",
                            "dev_loss": state["best_dev_loss"]})
            ctx.log_metrics(final_metrics(state, prefix=name))
        clear_storage(ctx.work_uri, "re")
        document_models(ctx, job, {TrainedRestorable.system_dir(ctx.output_dir, name) / "model": task
                                   for name, task in models})
        TrainedRestorable(ctx.output_dir, records).write(ctx.output_dir)
        ctx.log_metrics({"systems": len(records)})
