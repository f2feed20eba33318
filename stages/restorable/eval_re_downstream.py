"""Stage ``eval_re_downstream``: sentence-level tasks on the RE embeddings (RE appendix E, table 10).

The paper reports, per restoration model of its grid (the rows of table 9: "random
initialize" / freeze / grad x 1 / 3 / 5 sentences x 0 / 3 extra layers), accuracy on GLUE
SST-2, SST fine-grained and TREC (coarse, fine) "when using the sentence embedding of the
proposed model", without its protocol. Ours is SentEval's (Conneau & Kiela 2018) on frozen
embeddings (`stages.evaluation.probe`): every text of ``build_re_downstream`` is embedded
once per encoder; per task a multinomial logistic regression with an L2 penalty from
``eval.re_downstream.l2_grid``, picked on the dev split (SST) or by stratified k-fold
cross-validation on train (TREC, the stand-in), is refitted on train and scored on test.

Encoders: every ``train_re`` model with ``eval.re_downstream.pooling`` / ``decoder`` whose
configuration is in ``configs`` (paper row ``freeze|grad|<sentences>|<layers>``), and with
``pretrained_baselines`` the pretrained encoder-decoder's encoder with untrained new parts
(projection W; + the configurations' extra layers): the paper's "random initialize" rows
(``pretrained|<layers>``), seeded with ``run.seed``.

Outputs: the `EvalTable` (one row per encoder: accuracy x 100 per task with its Wilson 95%
interval and its n, ``n_<task>`` (the row's n where every task has the same), and the L2
picked, ``l2_<task>``; per task its per-test-sentence statistics (``units``, keyed by the
sentence's id: every encoder is scored on the same test sentences, so the report pairs a
restoration-trained encoder with the untrained one over them); flagged uninformative
when a probe predicts one label for every test sentence; ``ignores_input`` where its train_re
model's decoder ignores the embedding (`restoration_unused`); the table's ``floors``: per task
the accuracy of the probe's train split's majority label on the test sentences) and ``examples.jsonl`` (per
encoder, task and test sentence: the text, gold and predicted label, whether correct).
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch

from stages.artifacts.evaluate import Column, EvalTable, TableRow
from stages.common.floors import majority_floor
from stages.common.intervals import hits_interval
from stages.common.resampling import UnitSample
from stages.evaluation.probe import choose_l2, fit_probe
from stages.evaluation.publish import publish
from stages.evaluation.samples import Sample
from stages.framework.contract import section
from stages.framework.stage import Stage, StageContext
from stages.nugget.artifacts.models import TrainedNugget
from stages.restorable.artifacts import DownstreamTasks, TrainedRestorable, ignored_inputs
from stages.restorable.embedding import embed
from stages.restorable.restoration_task import restorable_base

if TYPE_CHECKING:
    from stages.config.schema import REBaseModel
    from stages.restorable.config import REDownstreamEval

TASK_HEADERS = {"sst2": "GLUE SST-2", "sst5": "SST fine-grained", "trec_coarse": "TREC coarse",
                "trec_fine": "TREC fine"}


def downstream_systems(cfg: REDownstreamEval, trained: TrainedRestorable) -> list[dict[str, Any]]:
    """The encoders probed (module docstring): name, paper row, the train_re record (None: untrained)."""
    picked = [r for r in trained.systems if r["pooling"] == cfg.pooling and r["decoder"] == cfg.decoder
              and r["config"] in cfg.configs]
    if not picked:
        raise ValueError(f"eval.re_downstream: train_re has no {cfg.pooling}-pooling / {cfg.decoder}-decoder model of "
                         f"configurations {cfg.configs} (it trained: {sorted({r['system'] for r in trained.systems})})")
    out = []
    if cfg.pretrained_baselines:
        out += [{"system": f"pretrained_{n}", "paper_row": f"pretrained|{n}", "record": None, "extra_layers": n}
                for n in sorted({r["extra_layers"] for r in picked})]
    for r in sorted(picked, key=lambda r: (r["extra_layers"], not r["freeze_pretrained"], r["sentences"])):
        mode = "freeze" if r["freeze_pretrained"] else "grad"
        out.append({"system": r["system"], "paper_row": f"{mode}|{r['sentences']}|{r['extra_layers']}", "record": r,
                    "extra_layers": r["extra_layers"]})
    return out


def sample_rows(rows: list[dict[str, Any]], limit: int, seed: int, what: str) -> list[dict[str, Any]]:
    """A seeded sample of ``limit`` rows (0 = all), in file order."""
    if not limit or len(rows) <= limit:
        return rows
    keep = sorted(random.Random(f"re_downstream:{seed}:{what}").sample(range(len(rows)), limit))
    return [rows[i] for i in keep]


@dataclass(frozen=True)
class TaskResult:
    """One encoder's probe on one task."""

    accuracy: float  # x 100, on test
    n: int
    interval: tuple[float, float] | None
    l2: float
    scores: dict[float, float]  # selection accuracy (0-1) per L2
    predicted: list[str]
    flag: str  # "" or why the probe is uninformative
    # per test sentence (its id: the same for every encoder, what pairs them), [correct x 100, 1]
    units: UnitSample


def probe_task(vectors: torch.Tensor, index: dict[str, int], splits: dict[str, list[dict[str, Any]]],
               labels: list[str], cfg: REDownstreamEval, seed: int) -> TaskResult:
    """Pick the L2 (dev, or cross-validation on train), refit on train, score test."""
    ids = {label: i for i, label in enumerate(labels)}

    def xy(rows: list[dict[str, Any]]) -> tuple[torch.Tensor, torch.Tensor]:
        x = vectors[torch.tensor([index[r["text"]] for r in rows], device=vectors.device)]
        return x, torch.tensor([ids[r["label"]] for r in rows], device=vectors.device)

    train, test = xy(splits["train"]), xy(splits["test"])
    dev = xy(splits["dev"]) if "dev" in splits else None
    choice = choose_l2(train, len(labels), cfg.l2_grid, cfg.max_iter, cfg.standardize, dev, cfg.cv_folds, seed)
    probe = fit_probe(*train, len(labels), choice.l2, cfg.max_iter, cfg.standardize)
    predicted = probe.predict(test[0]).tolist()
    hits = [p == g for p, g in zip(predicted, test[1].tolist(), strict=True)]
    names = [labels[p] for p in predicted]
    flag = f"predicts {names[0]!r} for all {len(names)} test sentences" if len(set(names)) == 1 else ""
    units = UnitSample.of("sentence", "ratio", [r["id"] for r in splits["test"]], [[100.0 * h, 1.0] for h in hits])
    return TaskResult(100.0 * sum(hits) / len(hits), len(hits), hits_interval(hits), choice.l2, choice.scores,
                      names, flag, units)


@dataclass(frozen=True)
class DownstreamConfig:
    probe: REDownstreamEval = section("eval.re_downstream")
    model: REBaseModel = section("model.re")
    dtype: str = section("eval.dtype")
    seed: int = section("run.seed")


@dataclass(frozen=True)
class DownstreamInputs:
    tasks: DownstreamTasks
    trained: TrainedRestorable
    nugget: TrainedNugget  # the pretrained encoder-decoder of profile=tiny (model.re.source=stage_ae)


class EvalREDownstream(Stage[DownstreamConfig, DownstreamInputs, EvalTable]):
    name = "eval_re_downstream"
    uses_device = True
    external_models = ("model.re.name_or_path",)

    def compute(self, ctx: StageContext, config: DownstreamConfig, inputs: DownstreamInputs) -> None:
        cfg, data, trained = config.probe, inputs.tasks, inputs.trained
        systems = downstream_systems(cfg, trained)
        splits = {t: {s: data.rows(t, s) for s in DownstreamTasks.splits_of(entry)} for t, entry in data.tasks.items()}
        for t in splits:
            splits[t]["train"] = sample_rows(splits[t]["train"], cfg.max_train, config.seed, f"{t}:train")
            splits[t]["test"] = splits[t]["test"][: cfg.max_test or None]
        # each distinct text once, shortest first: batches of like lengths carry little padding
        texts = sorted(dict.fromkeys(r["text"] for parts in splits.values() for rows in parts.values() for r in rows),
                       key=len)
        index = {text: i for i, text in enumerate(texts)}
        base = restorable_base(config.model, inputs.nugget)
        ignoring = ignored_inputs(trained)
        rows, examples = [], []
        for n, s in enumerate(systems, 1):
            tick = time.time()
            encoder, tokenizer, limit = self._encoder(s, trained, base, config, ctx.device)
            vectors = embed(encoder, tokenizer, texts, min(cfg.max_tokens, limit), cfg.batch_size, ctx.device).cpu()
            del encoder
            metrics: dict[str, float | None] = {}
            intervals, flags, units = {}, [], {}
            for task, parts in splits.items():
                result = probe_task(vectors, index, parts, data.tasks[task]["labels"], cfg, config.seed)
                metrics |= {task: result.accuracy, f"n_{task}": result.n, f"l2_{task}": result.l2}
                units[task] = result.units
                if result.interval is not None:
                    intervals[task] = result.interval
                flags += [f"{task}: {result.flag}"] if result.flag else []
                settings = {"task": task, "paper_row": s["paper_row"], "l2": result.l2,
                            "selection": data.tasks[task]["selection"]}
                examples += [Sample(r["id"], s["system"], {"text": r["text"]}, r["label"], p,
                                    {"correct": p == r["label"]}, settings, generated=False).row()
                             for r, p in zip(parts["test"], result.predicted, strict=True)]
            counts = {len(parts["test"]) for parts in splits.values()}
            rows.append(TableRow(system=s["system"], metrics=metrics, paper_row=s["paper_row"], interval=intervals,
                                 n=counts.pop() if len(counts) == 1 else None, flag="; ".join(flags), units=units,
                                 ignores_input=restoration_unused(s, ignoring)))
            shown = ", ".join(f"{t} {metrics[t]:.1f} (l2 {metrics[f'l2_{t}']:g})" for t in splits)
            print(f"[eval_re_downstream] {n}/{len(systems)} {s['system']}: {shown} ({len(texts)} texts embedded, "
                  f"{time.time() - tick:.1f}s)", flush=True)
        notes = [f"{t} ({data.tasks[t]['origin']}): {len(p['train'])} train / {len(p['test'])} test sentences, "
                 f"{len(data.tasks[t]['labels'])} labels; L2 picked "
                 + ("on its dev split" if "dev" in p else f"by {cfg.cv_folds}-fold cross-validation on train")
                 for t, p in splits.items()]
        # the chance level of each task: the probe's own train split's majority label, on the same test sentences
        floors = {t: majority_floor([r["label"] for r in p["train"]], [r["label"] for r in p["test"]])
                  for t, p in splits.items()}
        table = EvalTable(
            title="RE table 10: sentence-level tasks on the frozen RE embeddings, accuracy x 100 (linear probe)",
            columns=[Column(t, TASK_HEADERS.get(t, t)) for t in splits], rows=rows, stand_in=data.stand_in,
            floors=floors,
            notes=[f"SentEval-style probe: logistic regression, L2 from {cfg.l2_grid}, L-BFGS "
                   f"({cfg.max_iter} iterations), embeddings {'standardised' if cfg.standardize else 'as they are'}; "
                   "the paper does not state its protocol; intervals: Wilson's over the test sentences, every "
                   "encoder scored on the same ones (units: per test sentence)", *notes])
        publish(ctx, table, examples)

    @staticmethod
    def _encoder(s: dict[str, Any], trained: TrainedRestorable, base: Any, config: DownstreamConfig,
                 device: Any) -> tuple[Any, Any, int]:
        """The system's encoder (eval mode, on ``device``), its tokenizer and its token limit."""
        from nugget_core.restorable import RestorableConfig, get_restorable_model
        from stages.common.device import place_model
        from stages.training.task_steps import load_tokenizer

        record = s["record"]
        if record is not None:
            model = trained.load(record, device, config.dtype)
            return model.encoder, trained.tokenizer(record), record["max_tokens"]
        torch.manual_seed(config.seed)  # the untrained new parts, as train_re_retrieval draws them
        model = get_restorable_model(base.load(), RestorableConfig(pooling=config.probe.pooling,
                                                                   decoder=config.probe.decoder,
                                                                   extra_layers=s["extra_layers"]))
        tokenizer = load_tokenizer(base.path)
        return place_model(model, device, config.dtype).encoder, tokenizer, tokenizer.model_max_length


def restoration_unused(system: dict[str, Any], ignoring: dict[str, str]) -> str:
    """Why an encoder's restoration training did not train it through its embedding: its train_re
    model's decoder ignores the embedding (`ignored_inputs`), so "restoration training keeps
    accuracy" says nothing of restoration; "" for an untrained encoder or one whose decoder uses it."""
    record = system["record"]
    reason = ignoring.get(record["system"], "") if record is not None else ""
    return f"its restoration training is not shown to use the embedding: train_re/{record['system']} {reason}" \
        if reason else ""
