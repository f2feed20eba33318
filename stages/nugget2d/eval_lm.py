"""Stage ``eval_lm``: perplexity of autoregressive Nugget2D vs Full vs Compressive
(Nugget2D §5, table 1).

For each corpus of ``build_lm`` (WikiText-style ``wiki``, Pile-style ``pile``) and each
context configuration of ``eval.lm.contexts`` (total states / compressed tokens /
context tokens), every system reads each segment token by token (`stages.nugget2d.lm.streams`)
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
(`stages.evaluation.perplexity`; the wiki corpus's OOV marker excluded) with its 95% bootstrap
interval over the corpus's segments (the row's ``interval``), that of a unigram
model of the corpus's train segments on the same tokens (``<corpus>_unigram_ppl``: a row above
it on some corpus is flagged uninformative, `stages.common.degenerate`), the realised
nugget ratio, and the decoding cost: attended states per token, KV bytes held, wall
time per token. Outputs: the `stages.artifacts.evaluate.EvalTable` (n = segments per row;
each row's id and the table-1 row, ``<system>_<total states>``, it reproduces) and
``examples.jsonl`` (one line per segment, system and context configuration: the history read and
the recent text scored (``target``) as text, subword / word perplexity, loss, token and word
counts, the unigram reference's perplexity, the cost and the settings; also the MLflow table
``tables/examples.json``).

The procedure is the recipe `stages.nugget2d.lm.language_modelling.evaluate_lm`; this stage
reads its inputs (segments, unigram references, models, Lambda), calls it and publishes the result.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from stages.artifacts.evaluate import EvalTable
from stages.common.degenerate import UnigramModel
from stages.evaluation.publish import publish
from stages.framework.contract import produced_by, section
from stages.framework.stage import Stage, StageContext
from stages.nugget2d.artifacts import (
    CalibratedThreshold,
    LMRecords,
    PreparedLM,
    TrainedNugget2D,
    scorer_fingerprint,
)
from stages.nugget2d.config import LMEval, PressSection
from stages.nugget2d.lm.language_modelling import BASELINES, LOG, Segment, evaluate_lm

AR_STAGE = "train_nugget2d_ar"


def _segments(path: Path, split: str, limit: int) -> list[Segment]:
    rows = [r for r in pq.read_table(path, columns=["split", "distant", "recent"]).to_pylist()
            if r["split"] == split and r["recent"]]
    if not rows:
        raise ValueError(f"{path.name} has no segments in split {split!r}")
    rows = rows[:limit] if limit else rows
    return [(r["distant"], r["recent"]) for r in rows]


def _train_tokens(path: Path) -> Iterator[Any]:
    """The token ids of a segments file's train segments, NumPy arrays read batch by batch
    (a paper-scale train split is never held as Python lists)."""
    import pyarrow.compute as pc

    for batch in pq.ParquetFile(path).iter_batches(columns=["split", "distant", "recent"]):
        train = pc.equal(batch.column(0), "train")
        for column in (batch.column(1), batch.column(2)):
            yield pc.filter(column, train).flatten().to_numpy(zero_copy_only=False)


def unigram_model(path: Path, vocab_size: int) -> UnigramModel:
    """Token frequencies of the corpus's train segments (`stages.common.degenerate`): the
    context-free reference a system's perplexity on that corpus must beat (no train
    segments: an empty model, ``total`` 0)."""
    return UnigramModel.fit(_train_tokens(path), vocab_size)


def unigram_models(paths: dict[str, Path], vocab_size: int) -> tuple[dict[str, UnigramModel], list[str]]:
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


@dataclass(frozen=True)
class LMConfig:
    lm: LMEval = section("eval.lm")
    presses: PressSection = section("eval.presses")
    dtype: str = section("eval.dtype")


@dataclass(frozen=True)
class LMInputs:
    prepared: PreparedLM
    records: LMRecords
    calibrated: CalibratedThreshold
    trained: TrainedNugget2D = produced_by(AR_STAGE)


class EvalLM(Stage[LMConfig, LMInputs, EvalTable]):
    name = "eval_lm"
    uses_device = True

    @staticmethod
    def baseline_models(cfg: LMEval, trained: TrainedNugget2D, prepared: PreparedLM, device: str,
                        dtype: str) -> dict[str, Any]:
        """For ``baseline_adapter: trained``, each baseline's own model (``trained``'s variants,
        on ``prepared``'s base LM, placed on ``device`` in ``dtype``); else none: the
        baselines decode with the AR model's weights."""
        if cfg.baseline_adapter != "trained":
            return {}
        systems = [s for s in cfg.systems if s in BASELINES]
        missing = [s for s in systems if s not in trained.variants]
        if missing:
            raise ValueError(f"eval.lm.baseline_adapter=trained: {AR_STAGE} trained no {missing} "
                             f"(it holds {sorted(trained.variants)}); set train.nugget2d_ar.baselines")
        return {s: trained.variant(s).load_from(prepared.path, device, dtype)[0] for s in systems}

    def compute(self, ctx: StageContext, config: LMConfig, inputs: LMInputs) -> None:
        cfg = config.lm
        calibrated = inputs.calibrated
        threshold, ratio = calibrated.threshold, calibrated.ratio
        records = inputs.records
        data = {c: _segments(records.segments(c), cfg.split, cfg.max_segments) for c in cfg.corpora}
        trained = inputs.trained
        model, base = trained.load_from(inputs.prepared.path, ctx.device, config.dtype)
        tokenizer = base.tokenizer()
        same_scorer = scorer_fingerprint(model) == calibrated.scorer_fingerprint
        if not same_scorer:
            LOG.warning("eval_lm: %s's scorer differs from the one Lambda was calibrated on (%s); "
                        "the realised nugget ratio column shows the effect", AR_STAGE, calibrated.scorer_stage)
        baselines = self.baseline_models(cfg, trained, inputs.prepared, ctx.device, config.dtype)
        unigrams, unigram_notes = unigram_models({c: records.segments(c) for c in cfg.corpora}, len(tokenizer))
        provenance = [
            f"Lambda = {threshold:.4f} from calibrate_threshold (r = {ratio:g}); "
            f"scorer {'matches' if same_scorer else 'DIFFERS from'} the calibrated one.",
            "Full and Compressive decode with " + {
                "none": "the base LM", "decoder": f"{AR_STAGE}'s theta",
                "trained": f"their own LoRA theta, trained by {AR_STAGE} with its data and job (§5.1)"}[
                cfg.baseline_adapter] + "; Full attends to the last `total states` tokens (sliding window).",
        ]
        stand_ins = records.stand_ins()
        result = evaluate_lm(model, tokenizer, data, cfg, threshold=threshold, ratio=ratio, unigrams=unigrams,
                             presses=config.presses, baselines=baselines, provenance=provenance,
                             unigram_notes=unigram_notes,
                             stand_in="; ".join(f"{c}: {stand_ins[c]}" for c in cfg.corpora if c in stand_ins))
        ctx.set_tags({"lambda_scorer_match": same_scorer})
        publish(ctx, result.table, result.examples)
