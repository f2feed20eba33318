"""Stage ``eval_similarity``: PI and RR MRR x 100 of every system (Nugget tables 2 and 4).

Systems: every Nugget model of the sweep and of ``train_nugget`` (their nuggets, scored
by mean-MaxSim), the baselines of ``train_baselines`` (TSDAE and RE single vectors by
cosine; the rule-selector / no-feedback / r=0.033 Nugget ablations by mean-MaxSim) and
ColBART (every last-layer state of the pretrained encoder of ``model.seq2seq``, Nugget
§6.1.2, mean-MaxSim; with ``model.seq2seq.source=tiny_random`` there is no pretrained
encoder, so the HF weights of our MT-trained Nugget model with the lowest dev loss stand
in, read as a plain encoder; ``colbart_from`` in the output says which).

Data: the ``build_pi`` / ``build_rr`` artifacts, or the authors' released nugget-data
folders given by ``eval.pi_data_dir`` / ``eval.rr_data_dir``; ``eval.max_tasks`` caps
the tasks (first N). A task is one query document with its candidates, one of them the answer:
in PI a document (``L<i>``) with its paraphrase (``R<i>``) among BM25-mined paraphrases of
neighbouring documents; in RR an article's lead section with one other section of it among
sections of other articles. Each query is its own document (PI) / article (RR), so the query is
the independent unit the MRR's interval resamples (``units``: per query its reciprocal rank,
unit ids the query ids, the same for every system; tasks that share a query id are one unit).
Tasks share candidate documents (a negative of one query is the answer of another), a dependence
that resampling queries, the convention of IR significance tests, leaves in. Competence floor
(``floors``, per task): a random ranking's expected MRR (`stages.common.floors.random_mrr`), the
mean over the queries of their candidate counts. Output: `stages.nugget.artifacts.results.SimilarityResults`
(``similarity.json`` / ``.csv`` / ``.md``; a row's ``uninformative`` says why the system's
candidate rankings are (nearly) the same for every task, `stages.common.degenerate`, "" when
they are not; ``ignores_input``: the model's input-use check, `stages.nugget.systems.ignoring_input`);
every MRR is also an MLflow metric ``mrr.<task>.<system>`` with ``_n`` (queries) and ``_low`` / ``_high``,
each floor ``mrr_floor.<task>`` with ``_n``; ``ranks.jsonl`` (and the
MLflow table ``tables/examples.json``): per system, task and query, the query text, the number of candidates, the 5 best ones' texts,
the answer, the top hit, the answer's rank and reciprocal rank and the ranking's first 100 ids
(`stages.nugget.similarity.ranking_samples`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from stages.common.degenerate import LABEL, constant_outputs
from stages.evaluation.publish import log_flags
from stages.evaluation.samples import log_samples
from stages.framework.contract import optional, produced_by, reading, section
from stages.framework.stage import Stage, StageContext
from stages.nugget.artifacts.data import StoredSimilarityDataset
from stages.nugget.artifacts.models import NuggetSweep, TrainedBaselines, TrainedNugget
from stages.nugget.artifacts.results import SimilarityResults, interval_fields
from stages.nugget.encoders import load_system
from stages.nugget.measured import floor_metrics, sample_metrics
from stages.nugget.similarity import (
    metric_name,
    mrr_floor,
    query_units,
    ranking_samples,
    read_similarity_data,
    task_reciprocal_ranks,
    task_vectors,
)
from stages.nugget.systems import (
    System,
    collect_systems,
    ignoring_input,
    to_record,
    training_summaries,
)

if TYPE_CHECKING:
    from stages.config.schema import Seq2SeqModel


def colbart_source(systems: list[System], seq2seq: Seq2SeqModel) -> System | None:
    """The encoder that plays ColBART: the pretrained ``model.seq2seq`` if there is one,
    else the Nugget model that stands in for it (MT-trained, learned selector, lowest dev
    loss; AE only if no MT model exists)."""
    if seq2seq.source == "pretrained":
        return System(name=f"pretrained:{seq2seq.name_or_path}", kind="pretrained",
                      model_dir=Path(seq2seq.name_or_path), objective="none", source="model.seq2seq")
    learned = [s for s in systems if s.kind == "nugget" and s.selector == "topk" and s.feedback]
    pool = [s for s in learned if s.objective == "mt"] or learned
    return min(pool, key=lambda s: (s.dev_loss if s.dev_loss is not None else float("inf"), s.name), default=None)


@dataclass(frozen=True)
class SimilarityConfig:
    max_tasks: int = section("eval.max_tasks")
    batch_size: int = section("eval.batch_size")
    pi_data_dir: str = section("eval.pi_data_dir")
    rr_data_dir: str = section("eval.rr_data_dir")
    dtype: str = section("eval.dtype")
    seq2seq: Seq2SeqModel = section("model.seq2seq")


@dataclass(frozen=True)
class SimilarityInputs:
    pi: StoredSimilarityDataset = produced_by("build_pi")
    rr: StoredSimilarityDataset = produced_by("build_rr")
    # reading() on the rest too: to mypy a plain field may not follow one declared with "= ..."
    nugget: TrainedNugget = reading()
    baselines: TrainedBaselines = reading()
    sweep: NuggetSweep | None = optional()


class EvalSimilarity(Stage[SimilarityConfig, SimilarityInputs, SimilarityResults]):
    name = "eval_similarity"
    external_paths = ("eval.pi_data_dir", "eval.rr_data_dir")  # released nugget-data folders
    external_models = ("model.seq2seq.name_or_path",)  # the pretrained ColBART encoder
    uses_device = True

    @staticmethod
    def _datasets(config: SimilarityConfig, inputs: SimilarityInputs) -> dict[str, tuple[list, dict, str]]:
        out = {}
        for task, stage, override, built in (("pi", "build_pi", config.pi_data_dir, inputs.pi),
                                             ("rr", "build_rr", config.rr_data_dir, inputs.rr)):
            folder = Path(override).expanduser() if override else built.output.path
            tasks, docs = read_similarity_data(folder)
            cap = config.max_tasks
            tasks = tasks[:cap] if cap else tasks
            if not tasks:
                raise ValueError(f"{task}: no tasks in {folder}")
            out[task] = (tasks, docs, str(folder) if override else f"{stage} artifact {built.where.key}")
        return out

    def compute(self, ctx: StageContext, config: SimilarityConfig, inputs: SimilarityInputs) -> None:
        datasets = self._datasets(config, inputs)  # fail on missing data before loading any model
        systems = collect_systems(inputs)
        colbart = colbart_source(systems, config.seq2seq)
        jobs = [(s, s.kind) for s in systems] + ([(colbart, "colbart")] if colbart else [])
        ignoring = ignoring_input([s for s, _ in jobs], training_summaries(inputs))
        floors = {task: mrr_floor(tasks) for task, (tasks, _, _) in datasets.items()}
        metrics = {k: v for task, (tasks, _, _) in datasets.items()
                   for k, v in floor_metrics(metric_name("mrr_floor", task), floors[task], len(tasks)).items()}
        rows, ranks, flags = [], [], {}
        for n, (system, mode) in enumerate(jobs, 1):
            loaded = load_system(system, mode, ctx.device, config.dtype)
            for task, (tasks, docs, origin) in datasets.items():
                tick = time.time()
                vecs = task_vectors(loaded, tasks, docs, config.batch_size)
                per_task, rankings = task_reciprocal_ranks(vecs, tasks, multi=mode != "bottleneck")
                units = query_units(tasks, per_task)
                value, bounds = units.value(), units.interval()  # MRR x 100 over the queries
                label = "ColBART" if mode == "colbart" else system.name
                flag = constant_outputs(rankings)
                rows.append({
                    **to_record(system), "mode": mode, "label": label, "task": task, "mrr": value,
                    **interval_fields("mrr", bounds), "n_tasks": units.n, "data": origin,
                    "vectors_per_doc": sum(len(v) for v in vecs.values()) / len(vecs),
                    "units": {"mrr": units.to_json()}, "ignores_input": ignoring[system.name],
                    LABEL: f"candidate ranking: {flag}" if flag else "",
                })
                if flag:
                    flags[f"{label} {task}"] = rows[-1][LABEL]
                ranks += ranking_samples(label, {"task": task, "mode": mode}, tasks, docs, per_task, rankings)
                metrics |= sample_metrics(metric_name("mrr", task, label), units, bounds)  # mean over n queries
                print(f"[eval_similarity] {n}/{len(jobs)} {label} {task}: MRR {value:.2f} "
                      f"({units.n} queries, floor {floors[task].value:.2f}, {time.time() - tick:.1f}s)", flush=True)
        for path in SimilarityResults(rows, colbart.name if colbart else None, floors).write(ctx.output_dir)[1:]:
            ctx.log_artifact(path)
        log_samples(ctx, ctx.output_dir / SimilarityResults.EXAMPLES, ranks)
        ctx.log_metrics(metrics)
        log_flags(ctx, flags)
