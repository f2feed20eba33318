"""Stage ``train_re_retrieval``: DPR bi-encoders from the RE encoders (RE §4.4, tables 4, 9).

For each encoder configuration (``train.re_retrieval.configs``) and sentence count
(``sentence_counts``), a bi-encoder whose query and passage towers both start from the
encoder ``train_re`` trained with that configuration, count, ``pooling`` and ``decoder``
(the paper's "freeze" rows: configurations b / d; "grad": a / c); with
``pretrained_baselines``, also from the pretrained encoder-decoder with its new parts
untrained (the paper's "random initialize" rows: 0 and ``extra_layers`` new layers).
Every bi-encoder trains with the same job ``train.re_retrieval`` (appendix B: in-batch
negatives plus ``hard_negatives`` per query), one after another in one Ray Train fit.

Data (``build_re_retrieval``): the train / dev queries with their positive and hard
negative passages (Natural Questions as DPR released it on profile=paper; build_rr's
reranking tasks as a stand-in on profile=tiny).

Output (`stages.restorable.artifacts.TrainedRetrieval`): ``systems.json`` (per system:
``system``, ``paper_row`` of RE table 9, ``init``, ``sentences``, ``config``,
``max_query_tokens``, ``max_passage_tokens``, ``model_dir``, ``dev_loss``) and
``systems/<name>/model/{query,passage}/``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from stages.framework.contract import section
from stages.framework.stage import Stage, StageContext
from stages.nugget.artifacts.models import TrainedNugget
from stages.restorable.artifacts import RetrievalData, TrainedRestorable, TrainedRetrieval
from stages.restorable.restoration_task import restorable_base
from stages.restorable.retrieval_task import RetrievalTask
from stages.training.launch import check_resources, export_finished, final_metrics, fit_sequence
from stages.training.model_card import document_models
from stages.training.storage import clear_storage

if TYPE_CHECKING:
    from stages.config.schema import REBaseModel
    from stages.restorable.config import RERetrievalJob


def retrieval_systems(job: RERetrievalJob, trained: TrainedRestorable) -> list[dict[str, Any]]:
    """The bi-encoders of ``train.re_retrieval`` (name, paper row, train_re record or None)."""
    out = []
    layers = sorted({r["extra_layers"] for r in trained.systems if r["config"] in job.configs})
    if job.pretrained_baselines:
        out += [{"system": f"pretrained_{n}", "paper_row": f"pretrained|{n}", "record": None, "extra_layers": n,
                 "sentences": None, "config": "pretrained"} for n in layers]
    for config in job.configs:
        for k in job.sentence_counts:
            found = trained.find(config=config, sentences=k, pooling=job.pooling, decoder=job.decoder)
            if not found:
                raise ValueError(f"train.re_retrieval: train_re has no model for config={config!r}, sentences={k}, "
                                 f"pooling={job.pooling!r}, decoder={job.decoder!r}; add them to train.re")
            r = found[0]
            mode = "freeze" if r["freeze_pretrained"] else "grad"
            out.append({"system": f"{mode}_n{k}_{config}", "paper_row": f"{mode}|{k}|{r['extra_layers']}",
                        "record": r, "extra_layers": r["extra_layers"], "sentences": k, "config": config})
    return out


@dataclass(frozen=True)
class RetrievalConfig:
    job: RERetrievalJob = section("train.re_retrieval")
    model: REBaseModel = section("model.re")
    seed: int = section("run.seed")


@dataclass(frozen=True)
class RetrievalInputs:
    trained: TrainedRestorable
    data: RetrievalData
    nugget: TrainedNugget  # the pretrained encoder of profile=tiny (model.re.source=stage_ae)


class TrainRERetrieval(Stage[RetrievalConfig, RetrievalInputs, TrainedRetrieval]):
    name = "train_re_retrieval"
    external_models = ("model.re.name_or_path",)
    resources = {"num_cpus": 0}
    train_job = "train.re_retrieval"

    def compute(self, ctx: StageContext, config: RetrievalConfig, inputs: RetrievalInputs) -> None:
        job = config.job
        check_resources(job, "train.re_retrieval")
        trained, data = inputs.trained, inputs.data
        systems = retrieval_systems(job, trained)
        # the workers read the rows themselves (`RetrievalTask.load_split`)
        n_train = data.count("train")
        n_dev = min(job.dev_examples, data.count("dev")) if job.dev_examples else data.count("dev")
        print(f"[train_re_retrieval] {n_train} training queries, {n_dev} dev ({data.source})", flush=True)
        base = restorable_base(config.model, inputs.nugget)
        models = []
        for i, s in enumerate(systems, 1):
            r = s["record"]
            restorable = {"pooling": job.pooling, "decoder": job.decoder, "extra_layers": s["extra_layers"],
                          "freeze_pretrained": False}
            init = str(trained.model_dir(r)) if r else ""
            s["init"] = f"train_re {r['system']}" if r else f"{base.describe()}, new parts untrained"
            print(f"[train_re_retrieval] system {i}/{len(systems)}: {s['system']} (from {s['init']})", flush=True)
            models.append((s["system"], RetrievalTask(
                base=base, restorable=restorable, init=init, data=data, dev_examples=job.dev_examples,
                hard_negatives=job.hard_negatives, max_query_tokens=job.max_query_tokens,
                max_passage_tokens=job.max_passage_tokens, seed=config.seed)))
        if ctx.forced:
            clear_storage(ctx.work_uri, "re_retrieval")
        finished = fit_sequence(models, job, ctx.work_uri, "re_retrieval", config.seed, ctx.logger)
        records = []
        for s in systems:
            name = s["system"]
            state = export_finished(finished[name], TrainedRetrieval.system_dir(ctx.output_dir, name))
            records.append({"system": name, "paper_row": s["paper_row"], "init": s["init"],
                            "sentences": s["sentences"], "config": s["config"],
                            "max_query_tokens": job.max_query_tokens, "max_passage_tokens": job.max_passage_tokens,
                            "model_dir": f"systems/{name}/model", "dev_loss": state["best_dev_loss"]})
            ctx.log_metrics(final_metrics(state, prefix=name))
        clear_storage(ctx.work_uri, "re_retrieval")
        document_models(ctx, job, {TrainedRetrieval.system_dir(ctx.output_dir, name) / "model" / "query": task
                                   for name, task in models})
        TrainedRetrieval(ctx.output_dir, records).write(ctx.output_dir)
        ctx.log_metrics({"systems": len(records), "train_queries": n_train, "dev_queries": n_dev})
