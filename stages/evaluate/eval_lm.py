"""Stage ``eval_lm``: perplexity of autoregressive Nugget2D vs Full vs Compressive
(Nugget2D §5, table 1).

For each corpus of ``build_lm`` (WikiText-style ``wiki``, Pile-style ``pile``) and each
context configuration of ``eval.lm.contexts`` (total states / compressed tokens /
context tokens), every system reads each segment token by token (`stages.evaluate.lm.streams`)
and is scored on the segment's ``recent`` tokens, with its ``distant`` tokens as history.
Nugget2D is the ``train_nugget2d_ar`` checkpoint (trained with ``train_nugget2d``'s scorer
frozen) with Lambda from ``calibrate_threshold``, calibrated on that very scorer (never
a constant; the scorer fingerprints are compared and the result tagged); Compressive
uses the ratio Lambda was calibrated for. Full and Compressive decode with
``eval.lm.baseline_adapter``: the base LM (``none``), the AR model's theta (``decoder``)
or their own trained theta (``trained``: ``train_nugget2d_ar``'s variants of
``train.nugget2d_ar.baselines``, Nugget2D §5.1). The training-free presses
(``streaming_llm``, ``key_norm``; `PressStream`) decode with the base LM and keep the
same number of distant states per layer and KV head.

Reported per system and configuration: subword and word-level perplexity per corpus
(`stages.evaluate.lm.perplexity`; the wiki corpus's OOV marker excluded) with its 95% bootstrap
interval over the corpus's segments (the row's ``interval``), that of a unigram
model of the corpus's train segments on the same tokens (``<corpus>_unigram_ppl``: a row above
it on some corpus is flagged uninformative, `stages.common.degenerate`), the realised
nugget ratio, and the decoding cost: attended states per token, KV bytes held, wall
time per token. Outputs: the `stages.artifacts.evaluate.EvalTable` (n = segments per row;
each row's id and the table-1 row, ``<system>_<total states>``, it reproduces) and
``examples.jsonl`` (one line per segment and system).
"""

from __future__ import annotations

import math
import time
from collections import defaultdict
from collections.abc import Iterator
from contextlib import ExitStack
from typing import Any

import pyarrow.parquet as pq

from nugget_core.nugget2d.config import DECODER
from stages.artifacts.calibrate import CalibratedThreshold
from stages.artifacts.data import LMRecords
from stages.artifacts.evaluate import Column, EvalTable, TableRow
from stages.artifacts.train import TrainedNugget2D, scorer_fingerprint
from stages.common.degenerate import UnigramModel, above_unigram, combine
from stages.common.progress import progress_logger
from stages.evaluate.lm.perplexity import (
    PerplexityCounts,
    perplexity_intervals,
    segment_counts,
    word_texts,
)
from stages.evaluate.lm.presses import press_notes
from stages.evaluate.lm.streams import (
    ContextSetting,
    make_stream,
    run_segment,
    training_notes,
    windows,
)
from stages.evaluate.publish import publish
from stages.framework.stage import Stage, StageContext

log = progress_logger("nugget.eval_lm")
AR_STAGE = "train_nugget2d_ar"
COST = ("attended_states", "kv_bytes", "ms_per_token", "nugget_ratio")


def _segments(path, split: str, limit: int) -> list[tuple[list[int], list[int]]]:
    rows = [r for r in pq.read_table(path, columns=["split", "distant", "recent"]).to_pylist()
            if r["split"] == split and r["recent"]]
    if not rows:
        raise ValueError(f"{path.name} has no segments in split {split!r}")
    rows = rows[:limit] if limit else rows
    return [(r["distant"], r["recent"]) for r in rows]


def _train_tokens(path) -> Iterator[Any]:
    """The token ids of a segments file's train segments, NumPy arrays read batch by batch
    (a paper-scale train split is never held as Python lists)."""
    import pyarrow.compute as pc

    for batch in pq.ParquetFile(path).iter_batches(columns=["split", "distant", "recent"]):
        train = pc.equal(batch.column(0), "train")
        for column in (batch.column(1), batch.column(2)):
            yield pc.filter(column, train).flatten().to_numpy(zero_copy_only=False)


def unigram_model(path, vocab_size: int) -> UnigramModel:
    """Token frequencies of the corpus's train segments (`stages.common.degenerate`): the
    context-free reference a system's perplexity on that corpus must beat (no train
    segments: an empty model, ``total`` 0)."""
    return UnigramModel.fit(_train_tokens(path), vocab_size)


def unigram_models(paths: dict[str, Any], vocab_size: int) -> tuple[dict[str, UnigramModel], list[str]]:
    """Per corpus (``paths``: its segments file) the unigram reference, and a note per corpus
    that has no train split (the paper's WikiText: build_lm writes its validation / test
    articles only): its reference pools the train segments of the corpora that have one,
    the text the LMs trained on (the Pile)."""
    own = {corpus: unigram_model(path, vocab_size) for corpus, path in paths.items()}
    trained = [c for c, m in own.items() if m.total]
    if not trained:
        raise ValueError(f"eval_lm: none of eval.lm.corpora {list(paths)} has train segments in build_lm's output: "
                         "no unigram reference to flag an uninformative perplexity against")
    pooled = UnigramModel(sum(own[c].counts for c in trained), sum(own[c].total for c in trained))
    missing = [c for c in paths if not own[c].total]
    notes = [f"{c} has no train split: its unigram reference is the train segments of {', '.join(trained)}"
             for c in missing]
    return {c: own[c] if own[c].total else pooled for c in paths}, notes


def unigram_flag(metrics: dict[str, float], corpora: list[str]) -> str | None:
    """Why a row's perplexity is uninformative: above the unigram model's on some corpus."""
    return combine(*(above_unigram(metrics[f"{c}_subword_ppl"], metrics[f"{c}_unigram_ppl"], f"{c} subword PPL")
                     for c in corpora))


def _columns(corpora: list[str]) -> list[Column]:
    cols = [Column("total_states", "total states", "{:.0f}"),
            Column("compressed_tokens", "cmpr. tokens", "{:.0f}"),
            Column("context_tokens", "ctx. tokens", "{:.0f}")]
    for c in corpora:
        cols += [Column(f"{c}_subword_ppl", f"{c} subword ppl"), Column(f"{c}_word_ppl", f"{c} word ppl"),
                 Column(f"{c}_unigram_ppl", f"{c} unigram subword ppl")]
    return cols + [Column("attended_states", "attended states/token", "{:.1f}"),
                   Column("kv_bytes", "KV bytes", "{:.0f}"),
                   Column("ms_per_token", "ms/token", "{:.1f}"),
                   Column("nugget_ratio", "nugget ratio", "{:.3f}")]


class EvalLM(Stage):
    name = "eval_lm"
    upstream = ("prepare_lm", "build_lm", "calibrate_threshold", AR_STAGE)
    config_keys = ("eval.lm", "eval.presses", "eval.dtype")
    uses_device = True

    @staticmethod
    def baseline_models(cfg, ctx: StageContext, trained: TrainedNugget2D) -> tuple[str | None, dict]:
        """The adapter the baselines decode with and, for ``baseline_adapter: trained``,
        each baseline's own model (``trained``'s variants); else they decode with the AR
        model's weights (``none``: every adapter off)."""
        if cfg.baseline_adapter != "trained":
            return (None if cfg.baseline_adapter == "none" else DECODER), {}
        systems = [s for s in cfg.systems if s in ("full", "compressive")]
        missing = [s for s in systems if s not in trained.variants]
        if missing:
            raise ValueError(f"eval.lm.baseline_adapter=trained: {AR_STAGE} trained no {missing} "
                             f"(it holds {sorted(trained.variants)}); set train.nugget2d_ar.baselines")
        return DECODER, {s: trained.variant(s).load_from(ctx.inputs["prepare_lm"], ctx.device, ctx.cfg("eval.dtype"))[0]
                         for s in systems}

    def run(self, ctx: StageContext) -> None:
        cfg = ctx.cfg("eval.lm")
        calibrated = CalibratedThreshold.read(ctx.inputs["calibrate_threshold"])
        threshold, ratio = calibrated.threshold, calibrated.ratio
        records = LMRecords.read(ctx.inputs["build_lm"])
        data = {c: _segments(records.segments(c), cfg.split, cfg.max_segments) for c in cfg.corpora}
        settings = [ContextSetting(s.total_states, s.compressed_tokens, s.context_tokens) for s in cfg.contexts]
        trained = TrainedNugget2D.read(ctx.inputs[AR_STAGE], AR_STAGE)
        model, base = trained.load_from(ctx.inputs["prepare_lm"], ctx.device, ctx.cfg("eval.dtype"))
        tokenizer = base.tokenizer()
        same_scorer = scorer_fingerprint(model) == calibrated.scorer_fingerprint
        if not same_scorer:
            log.warning("eval_lm: %s's scorer differs from the one Lambda was calibrated on (%s); "
                        "the realised nugget ratio column shows the effect", AR_STAGE, calibrated.scorer_stage)
        adapter, baselines = self.baseline_models(cfg, ctx, trained)

        unigrams, unigram_notes = unigram_models({c: records.segments(c) for c in cfg.corpora}, len(tokenizer))
        counts: dict[tuple, list[PerplexityCounts]] = defaultdict(list)  # per segment: the intervals resample them
        costs: dict[tuple, list[dict]] = defaultdict(list)
        examples = []
        total = len(settings) * len(cfg.systems) * sum(len(v) for v in data.values())
        done, start = 0, time.perf_counter()
        for corpus, segments in data.items():
            oov = cfg.wiki_oov_token if corpus == "wiki" else ""
            for seg_id, (distant, recent) in enumerate(segments):
                ids = distant + recent
                texts = word_texts(tokenizer, ids)
                counts["unigram", corpus].append(segment_counts(unigrams[corpus].token_nll(recent), texts,
                                                             len(distant), oov))
                for setting in settings:
                    with ExitStack() as scope:
                        for m in {id(m): m for m in (model, *baselines.values())}.values():
                            scope.enter_context(windows(m, setting, threshold))
                        for system in cfg.systems:
                            stream = make_stream(system, baselines.get(system, model), setting, ratio, adapter,
                                                 ctx.cfg("eval.presses").sink_tokens)
                            run = run_segment(stream, ids, len(distant))
                            seg = segment_counts(run.nll, texts, len(distant), oov)
                            key = (system, setting)
                            counts[key, corpus].append(seg)
                            costs[key].append({k: getattr(run, k) for k in COST})
                            examples.append({"corpus": corpus, "segment": seg_id, "system": system,
                                             "context": setting.label, "subword_ppl": seg.subword_ppl,
                                             "word_ppl": seg.word_ppl, "tokens": seg.subwords,
                                             **costs[key][-1]})
                            done += 1
                log.info("eval_lm: %d/%d segment runs (%.2f/s), %s segment %d", done, total,
                         done / (time.perf_counter() - start), corpus, seg_id)

        rows = []
        for setting in settings:
            for system in cfg.systems:
                metrics = {"total_states": setting.total_states,
                           "compressed_tokens": 0 if system == "full" else setting.compressed_tokens,
                           "context_tokens": setting.total_states if system == "full" else setting.context_tokens}
                interval: dict[str, tuple[float, float]] = {}
                for corpus in cfg.corpora:
                    segments = counts[(system, setting), corpus]
                    c = PerplexityCounts.total(segments)
                    interval |= {f"{corpus}_{k}": v for k, v in perplexity_intervals(segments).items()}
                    metrics |= {f"{corpus}_subword_ppl": c.subword_ppl, f"{corpus}_word_ppl": c.word_ppl,
                                f"{corpus}_tokens": c.subwords, f"{corpus}_words": c.words,
                                f"{corpus}_oov_words": c.oov_words,
                                f"{corpus}_unigram_ppl": PerplexityCounts.total(counts["unigram", corpus]).subword_ppl}
                runs = costs[(system, setting)]
                for k in COST:
                    values = [r[k] for r in runs if not math.isnan(r[k])]
                    if values:
                        metrics[k] = sum(values) / len(values)
                # Nugget2D table 1 rows are a system at a number of total states (e.g. nugget2d_128)
                rows.append(TableRow(f"{system} {setting.label}", metrics, n=sum(len(v) for v in data.values()),
                                     paper_row=f"{system}_{setting.total_states}", interval=interval,
                                     flag=unigram_flag(metrics, cfg.corpora) or ""))
        notes = [
            f"Lambda = {threshold:.4f} from calibrate_threshold (r = {ratio:g}); "
            f"scorer {'matches' if same_scorer else 'DIFFERS from'} the calibrated one.",
            "Full and Compressive decode with " + {
                "none": "the base LM", "decoder": f"{AR_STAGE}'s theta",
                "trained": f"their own LoRA theta, trained by {AR_STAGE} with its data and job (§5.1)"}[
                cfg.baseline_adapter] + "; Full attends to the last `total states` tokens (sliding window).",
            *press_notes(ctx.cfg("eval.presses"), cfg.systems,
                         "total - context states among every token before the context window (no compressed-token "
                         "limit: StreamingLLM's sinks are the segment's first tokens)"),
            f"{sum(len(v) for v in data.values())} segments ({', '.join(f'{k}: {len(v)}' for k, v in data.items())}), "
            "scored on their recent tokens; costs are means over segments; a perplexity's [low, high]: its 95% "
            "bootstrap interval over the corpus's segments.",
            "unigram PPL: add-one smoothed token frequencies of the corpus's train segments, on the same tokens; a "
            "system above it on some corpus is flagged uninformative.",
            *unigram_notes,
            *training_notes(model.config.recent_window, max(len(d) + len(r) for v in data.values() for d, r in v),
                            settings, cfg.systems, cfg.baseline_adapter == "trained"),
        ]
        ctx.set_tags({"lambda_scorer_match": same_scorer})
        stand_ins = records.stand_ins()
        stand_in = "; ".join(f"{c}: {stand_ins[c]}" for c in cfg.corpora if c in stand_ins)
        publish(ctx, EvalTable("Autoregressive LM perplexity (Nugget2D table 1)", _columns(cfg.corpora), rows, notes,
                               stand_in),
                examples)
