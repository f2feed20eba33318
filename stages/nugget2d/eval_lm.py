"""Stage ``eval_lm``: perplexity of autoregressive Nugget2D vs Full vs Compressive
(Nugget2D §5, table 1).

For each corpus of ``build_lm`` (WikiText-style ``wiki``, Pile-style ``pile``) and each
context configuration of ``eval.lm.contexts`` (total states / compressed tokens /
context tokens), every system reads each segment (at most ``eval.lm.max_segments``, taken across
the corpus's articles: `stages.nugget2d.lm.segments.read_documents`) token by token (`stages.nugget2d.lm.streams`)
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
(`stages.evaluation.perplexity`; the wiki corpus's OOV marker excluded) with its per-article
statistics (the row's ``units``: the segments of one source article, ``build_lm``'s
``document_id``, are one unit, and every system is scored on the same articles, so two systems
pair) and its 95% bootstrap interval over the corpus's articles (``interval``), that of a unigram
model of the corpus's train segments on the same tokens (``<corpus>_unigram_ppl``: a row above
it on some corpus is flagged uninformative, `stages.common.degenerate`), the realised
nugget ratio, and the decoding cost: attended states per token, KV bytes held, wall
time per token. A row of a model whose fit found it ignores its compressed input carries why
(``ignores_input``: the nugget2d row from ``train_nugget2d_ar``'s model, Full and Compressive from
their own models under ``baseline_adapter: trained``). The competence floor of every perplexity
(``floors``) is a Kneser-Ney trigram model of the corpus's train segments on the same tokens, also
the row ``Kneser-Ney trigram (floor)``. Outputs: the `stages.artifacts.evaluate.EvalTable` (n =
articles per row; each row's id and the table-1 row, ``<system>_<total states>``, it reproduces)
and ``examples.jsonl`` (one line per segment, system and context configuration: the history read
and the recent text scored (``target``) as text, its article, subword / word perplexity, loss,
token and word counts, the unigram reference's perplexity, the cost and the settings; also the
MLflow table ``tables/examples.json``).

The procedure is the recipe `stages.nugget2d.lm.language_modelling.evaluate_lm`; this stage
reads its inputs (segments and their articles, unigram and trigram references, models, Lambda,
the models' input use), calls it and publishes the result.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from stages.artifacts.evaluate import EvalTable
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
from stages.nugget2d.lm.evaluation import ignores_input
from stages.nugget2d.lm.language_modelling import BASELINES, LOG, evaluate_lm
from stages.nugget2d.lm.segments import first_scored, read_documents, trigram_models, unigram_models

AR_STAGE = "train_nugget2d_ar"


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

    @staticmethod
    def input_use(cfg: LMEval, trained: TrainedNugget2D) -> dict[str, str]:
        """Per system decoding with a model trained by ``trained``'s fit, why that model ignores its
        compressed input (`ignores_input`): nugget2d is ``trained``'s main model; Full and Compressive
        their own variants under ``baseline_adapter: trained`` (else they decode with the base LM or
        the AR model's theta without its nuggets: no input of theirs was trained). The presses decode
        with the base LM."""
        models = {"nugget2d": trained} if "nugget2d" in cfg.systems else {}
        if cfg.baseline_adapter == "trained":
            models |= {s: trained.variant(s) for s in cfg.systems if s in BASELINES}
        return {s: reason for s, m in models.items() if (reason := ignores_input(m.summary(AR_STAGE)))}

    def compute(self, ctx: StageContext, config: LMConfig, inputs: LMInputs) -> None:
        cfg = config.lm
        calibrated = inputs.calibrated
        threshold, ratio = calibrated.threshold, calibrated.ratio
        records = inputs.records
        read = {c: read_documents(records.segments(c), cfg.split, cfg.max_segments) for c in cfg.corpora}
        data, documents = {c: r[0] for c, r in read.items()}, {c: r[1] for c, r in read.items()}
        if "pile" in data:  # Nugget2D §5.2: a held-out Pile subset of 100k tokens (eval.lm.pile_tokens)
            data["pile"] = first_scored(data["pile"], cfg.pile_tokens)
            documents["pile"] = documents["pile"][: len(data["pile"])]  # first_scored keeps a prefix
        trained = inputs.trained
        model, base = trained.load_from(inputs.prepared.path, ctx.device, config.dtype)
        tokenizer = base.tokenizer()
        same_scorer = scorer_fingerprint(model) == calibrated.scorer_fingerprint
        if not same_scorer:
            LOG.warning("eval_lm: %s's scorer differs from the one Lambda was calibrated on (%s); "
                        "the realised nugget ratio column shows the effect", AR_STAGE, calibrated.scorer_stage)
        baselines = self.baseline_models(cfg, trained, inputs.prepared, ctx.device, config.dtype)
        files = {c: records.segments(c) for c in cfg.corpora}
        unigrams, unigram_notes = unigram_models(files, len(tokenizer))
        trigrams, trigram_notes = trigram_models(files, len(tokenizer))
        provenance = [
            f"Lambda = {threshold:.4f} from calibrate_threshold (r = {ratio:g}); "
            f"scorer {'matches' if same_scorer else 'DIFFERS from'} the calibrated one.",
            "Full and Compressive decode with " + {
                "none": "the base LM", "decoder": f"{AR_STAGE}'s theta",
                "trained": f"their own LoRA theta, trained by {AR_STAGE} with its data and job (§5.1)"}[
                cfg.baseline_adapter] + "; Full attends to the last `total states` tokens (sliding window).",
        ]
        if "pile" in data and cfg.pile_tokens:
            provenance.append(f"pile: the first {len(data['pile'])} {cfg.split} segments, "
                              f"{sum(len(recent) for _, recent in data['pile'])} scored tokens (eval.lm.pile_tokens = "
                              f"{cfg.pile_tokens}: Nugget2D §5.2's held-out Pile subset of 100k tokens).")
        stand_ins = records.stand_ins()
        result = evaluate_lm(model, tokenizer, data, cfg, threshold=threshold, ratio=ratio, unigrams=unigrams,
                             documents=documents, trigrams=trigrams, presses=config.presses, baselines=baselines,
                             ignores_input=self.input_use(cfg, trained), provenance=provenance,
                             unigram_notes=[*unigram_notes, *trigram_notes],
                             stand_in="; ".join(f"{c}: {stand_ins[c]}" for c in cfg.corpora if c in stand_ins))
        ctx.set_tags({"lambda_scorer_match": same_scorer})
        publish(ctx, result.table, result.examples)
