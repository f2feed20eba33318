"""The autoregressive language-modelling evaluation of Nugget2D §5 (table 1) as a recipe,
`evaluate_lm`: the procedure of the ``eval_lm`` stage, callable outside Ray (no stage context,
no MLflow), e.g. from a notebook::

    from stages.nugget2d.config import LMEval
    from stages.nugget2d.lm.language_modelling import evaluate_lm
    result = evaluate_lm(model, tokenizer, {"wiki": [(distant_ids, recent_ids)]}, LMEval(corpora=["wiki"]),
                         threshold=0.5, ratio=0.1, unigrams={"wiki": unigram})
    print(result.table.to_markdown())

Steps: every system reads each segment token by token under each context configuration
(`stages.nugget2d.lm.streams`) and is scored on the segment's recent tokens
(`stages.evaluation.perplexity`); per system and configuration the subword / word perplexity per
corpus with its bootstrap interval over the corpus's articles (the documents the segments were cut
from: a `UnitSample` per perplexity, so two systems pair on the same articles), the unigram
reference's, the realised nugget ratio and the decoding cost make a row, flagged uninformative
above the unigram reference (`unigram_flag`). The Kneser-Ney trigram model of the train segments,
scored on the same tokens, is the competence floor of every perplexity (`EvalTable.floors`) and a
row of its own (`FLOOR_ROW`), so the perplexities read on one scale.
"""

from __future__ import annotations

import math
import time
from collections import defaultdict
from collections.abc import Mapping, Sequence
from contextlib import ExitStack
from logging import Logger
from typing import TYPE_CHECKING, Any

from nugget_core.nugget2d.config import DECODER
from stages.artifacts.evaluate import Column, EvalTable, TableRow
from stages.common.degenerate import UnigramModel, above_unigram, combine
from stages.common.floors import Floor
from stages.common.ngram import KneserNeyTrigram
from stages.common.progress import progress_logger
from stages.common.resampling import MIN_UNITS, UnitSample
from stages.evaluation.decoding import decode_ids
from stages.evaluation.perplexity import (
    PerplexityCounts,
    perplexity_units,
    segment_counts,
    word_texts,
)
from stages.evaluation.samples import Sample
from stages.nugget2d.config import LMEval, PressSection
from stages.nugget2d.lm.evaluation import Evaluation
from stages.nugget2d.lm.presses import press_notes
from stages.nugget2d.lm.streams import (
    ContextSetting,
    make_stream,
    run_segment,
    training_notes,
    windows,
)

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase

    from nugget_core.nugget2d import Nugget2DModel

LOG = progress_logger("nugget.eval_lm")
TITLE = "Autoregressive LM perplexity (Nugget2D table 1)"
COST = ("attended_states", "kv_bytes", "ms_per_token", "nugget_ratio")
BASELINES = ("full", "compressive")  # the systems ``baselines`` may give their own trained model
Segment = tuple[list[int], list[int]]  # a segment's distant (history) and recent (scored) token ids
UNIT = "article"  # what a perplexity's interval resamples: the source document (article) of the segments
FLOOR_ROW = "Kneser-Ney trigram (floor)"
PERPLEXITIES = ("subword_ppl", "word_ppl")


def unigram_flag(metrics: Mapping[str, float | None], corpora: Sequence[str]) -> str | None:
    """Why a row's perplexity is uninformative: above the unigram model's on some corpus."""
    return combine(*(above_unigram(metrics[f"{c}_subword_ppl"], metrics[f"{c}_unigram_ppl"], f"{c} subword PPL")
                     for c in corpora))


def columns(corpora: Sequence[str]) -> list[Column]:
    """The table-1 columns: the context configuration, each corpus's perplexities, the cost."""
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


def baseline_adapter(section: LMEval) -> str | None:
    """What Full and Compressive decode with under ``section.baseline_adapter``: the base LM
    (None, ``none``) or theta (``decoder``; ``trained``: their own models' theta)."""
    return None if section.baseline_adapter == "none" else DECODER


def corpus_cells(corpus: str, per_segment: Sequence[PerplexityCounts], documents: Sequence[str]
                 ) -> tuple[dict[str, float | None], dict[str, UnitSample], dict[str, tuple[float, float]]]:
    """One corpus's cells of a row from its segments' counts (``documents[i]``: the article segment
    ``i`` was cut from): the subword / word perplexity and their n (articles), the token / word / OOV
    counts; each perplexity's `UnitSample` over articles; and its 95% interval where it has one."""
    c = PerplexityCounts.total(per_segment)
    units = {f"{corpus}_{k}": u for k, u in perplexity_units(per_segment, documents, UNIT).items()}
    metrics: dict[str, float | None] = {
        f"{corpus}_subword_ppl": c.subword_ppl, f"{corpus}_word_ppl": c.word_ppl,
        **{f"n_{k}": u.n for k, u in units.items()},
        f"{corpus}_tokens": c.subwords, f"{corpus}_words": c.words, f"{corpus}_oov_words": c.oov_words}
    return metrics, units, {k: bounds for k, u in units.items() if (bounds := u.interval()) is not None}


def evaluate_lm(
    model: Nugget2DModel,
    tokenizer: PreTrainedTokenizerBase,
    segments: Mapping[str, Sequence[Segment]],
    section: LMEval,
    *,
    threshold: float,
    ratio: float,
    unigrams: Mapping[str, UnigramModel],
    documents: Mapping[str, Sequence[str]],
    trigrams: Mapping[str, KneserNeyTrigram] | None = None,
    presses: PressSection | None = None,
    baselines: Mapping[str, Nugget2DModel] | None = None,
    ignores_input: Mapping[str, str] | None = None,
    provenance: Sequence[str] = (),
    unigram_notes: Sequence[str] = (),
    stand_in: str = "",
    log: Logger = LOG,
) -> Evaluation:
    """Every system of ``section.systems`` under every configuration of ``section.contexts`` on
    each corpus's ``segments`` (the keys: ``section.corpora``):

    - ``nugget2d``: ``model`` (the autoregressive Nugget2D) selecting with Lambda = ``threshold``;
    - ``full`` / ``compressive``: ``baselines[system]`` when given (``baseline_adapter: trained``),
      else ``model``, decoding with `baseline_adapter`; Compressive at ``ratio``;
    - ``streaming_llm`` / ``key_norm``: the base LM's KV pressed to the same budget (``presses``,
      default `PressSection()`).

    ``unigrams``: per corpus the context-free reference a perplexity must beat. ``documents``: per
    corpus, the id of the document (article) each segment was cut from: the unit every perplexity's
    interval resamples. ``trigrams``: per corpus the Kneser-Ney trigram model of the train split, the
    competence floor (`EvalTable.floors`, and the row `FLOOR_ROW`; None: no floor).
    ``ignores_input``: per system, why its model ignores its compressed input
    (`stages.nugget2d.artifacts.ignores_input`; its rows carry it). ``provenance``: notes on where
    the model, Lambda and the baselines come from (first in the table's notes); ``unigram_notes``
    follow the unigram note. Returns the `EvalTable` (n = articles per row, each perplexity with its
    `UnitSample` and 95% bootstrap interval over articles) and one example row per segment, system
    and configuration.
    """
    presses = presses if presses is not None else PressSection()
    own = dict(baselines or {})
    if missing := [c for c in section.corpora if c not in segments or c not in unigrams]:
        raise ValueError(f"evaluate_lm: corpora {missing} have no segments or no unigram reference")
    if not all(segments[c] for c in section.corpora):
        raise ValueError(f"evaluate_lm: a corpus of {list(section.corpora)} has no segments")
    if bad := [c for c in section.corpora if len(documents.get(c, ())) != len(segments[c])]:
        raise ValueError(f"evaluate_lm: documents: corpora {bad} do not name one document per segment")
    if trigrams is not None and (missing := [c for c in section.corpora if c not in trigrams]):
        raise ValueError(f"evaluate_lm: trigrams: no Kneser-Ney trigram model for corpora {missing}")
    if section.baseline_adapter == "trained" and (
            missing := [s for s in section.systems if s in BASELINES and s not in own]):
        raise ValueError(f"evaluate_lm: baseline_adapter=trained, but no trained model for {missing}")
    data = {c: segments[c] for c in section.corpora}
    adapter = baseline_adapter(section)
    settings = [ContextSetting(s.total_states, s.compressed_tokens, s.context_tokens) for s in section.contexts]
    # per segment: summed into articles for the intervals
    counts: dict[tuple[str, ContextSetting, str], list[PerplexityCounts]] = defaultdict(list)
    unigram_counts: dict[str, list[PerplexityCounts]] = defaultdict(list)
    trigram_counts: dict[str, list[PerplexityCounts]] = defaultdict(list)
    costs: dict[tuple[str, ContextSetting], list[dict[str, float]]] = defaultdict(list)
    examples: list[dict[str, Any]] = []
    n_segments = sum(len(v) for v in data.values())
    total = len(settings) * len(section.systems) * n_segments
    done, start = 0, time.perf_counter()
    for corpus, corpus_segments in data.items():
        oov = section.wiki_oov_token if corpus == "wiki" else ""
        for seg_id, (distant, recent) in enumerate(corpus_segments):
            ids = distant + recent
            texts = word_texts(tokenizer, ids)
            unigram_counts[corpus].append(segment_counts(unigrams[corpus].token_nll(recent), texts, len(distant), oov))
            if trigrams is not None:  # the recent tokens with the segment's tokens before them as context
                trigram_counts[corpus].append(
                    segment_counts(trigrams[corpus].token_nll(ids)[len(distant):].tolist(), texts, len(distant), oov))
            # what every system reads (the history) and is scored on (the recent tokens), as text
            inputs = {"corpus": corpus, "history": decode_ids(tokenizer, distant)}
            target, unigram_ppl = decode_ids(tokenizer, recent), unigram_counts[corpus][-1].subword_ppl
            for setting in settings:
                with ExitStack() as scope:
                    for m in {id(m): m for m in (model, *own.values())}.values():
                        scope.enter_context(windows(m, setting, threshold))
                    for system in section.systems:
                        stream = make_stream(system, own.get(system, model), setting, ratio, adapter,
                                             presses.sink_tokens)
                        run = run_segment(stream, ids, len(distant))
                        seg = segment_counts(run.nll, texts, len(distant), oov)
                        counts[system, setting, corpus].append(seg)
                        costs[system, setting].append({k: getattr(run, k) for k in COST})
                        examples.append(Sample(
                            f"{corpus}-{seg_id}", system, inputs, target, None,
                            {"segment": seg_id, "document": documents[corpus][seg_id], "subword_ppl": seg.subword_ppl,
                             "word_ppl": seg.word_ppl, "loss": seg.subword_nll / max(seg.subwords, 1),
                             "tokens": seg.subwords, "words": seg.words, "oov_words": seg.oov_words,
                             "unigram_ppl": unigram_ppl, **costs[system, setting][-1]},
                            {"context": setting.label, "total_states": setting.total_states,
                             "compressed_tokens": setting.compressed_tokens, "context_tokens": setting.context_tokens,
                             "threshold": threshold if system == "nugget2d" else None,
                             "ratio": ratio if system == "compressive" else None}).row())
                        done += 1
            log.info("eval_lm: %d/%d segment runs (%.2f/s), %s segment %d", done, total,
                     done / (time.perf_counter() - start), corpus, seg_id)

    n_documents = sum(len(set(documents[c])) for c in section.corpora)
    rows = []
    for setting in settings:
        for system in section.systems:
            metrics: dict[str, float | None] = {
                "total_states": setting.total_states,
                "compressed_tokens": 0 if system == "full" else setting.compressed_tokens,
                "context_tokens": setting.total_states if system == "full" else setting.context_tokens}
            units: dict[str, UnitSample] = {}
            interval: dict[str, tuple[float, float]] = {}
            for corpus in section.corpora:
                cells, corpus_units, bounds = corpus_cells(corpus, counts[system, setting, corpus], documents[corpus])
                metrics |= cells | {
                    f"{corpus}_unigram_ppl": PerplexityCounts.total(unigram_counts[corpus]).subword_ppl}
                units |= corpus_units
                interval |= bounds
            runs = costs[system, setting]
            for k in COST:
                values = [r[k] for r in runs if not math.isnan(r[k])]
                if values:
                    metrics[k] = sum(values) / len(values)
            # Nugget2D table 1 rows are a system at a number of total states (e.g. nugget2d_128)
            rows.append(TableRow(f"{system} {setting.label}", metrics, n=n_documents,
                                 paper_row=f"{system}_{setting.total_states}", interval=interval,
                                 flag=unigram_flag(metrics, section.corpora) or "", units=units,
                                 ignores_input=(ignores_input or {}).get(system, "")))
    floors: dict[str, Floor] = {}
    if trigrams is not None:
        rows.append(floor_row(trigram_counts, documents, section.corpora, n_documents))
        floors = {k: Floor(float(v), False, "a Kneser-Ney trigram model of the train segments on the same tokens")
                  for k, v in rows[-1].metrics.items()
                  if k.endswith(PERPLEXITIES) and not k.startswith("n_") and v is not None and math.isfinite(v)}
    notes = [
        *provenance,
        *press_notes(presses, section.systems,
                     "total - context states among every token before the context window (no compressed-token "
                     "limit: StreamingLLM's sinks are the segment's first tokens)"),
        f"{n_segments} segments ({', '.join(f'{k}: {len(v)}' for k, v in data.items())}) cut from {n_documents} "
        f"articles ({', '.join(f'{c}: {len(set(documents[c]))}' for c in section.corpora)}), scored on their "
        "recent tokens; n = articles; costs are means over segments; a perplexity's [low, high]: its 95% "
        "percentile bootstrap interval over the corpus's articles (an article's segments are one unit; none "
        f"from fewer than {MIN_UNITS}).",
        "unigram PPL: add-one smoothed token frequencies of the corpus's train segments, on the same tokens; a "
        "system above it on some corpus is flagged uninformative.",
        *unigram_notes,
        *([f"{FLOOR_ROW}: interpolated Kneser-Ney trigram model of the corpus's train segments, each recent token "
           "scored given the two tokens before it; the competence floor of every perplexity (a system not below "
           "it does not model the language)."] if trigrams is not None else []),
        *training_notes(model.config.recent_window, max(len(d) + len(r) for v in data.values() for d, r in v),
                        settings, section.systems, section.baseline_adapter == "trained"),
    ]
    return Evaluation(EvalTable(TITLE, columns(section.corpora), rows, notes, stand_in, floors), examples)


def floor_row(trigram_counts: Mapping[str, Sequence[PerplexityCounts]], documents: Mapping[str, Sequence[str]],
              corpora: Sequence[str], n_documents: int) -> TableRow:
    """The `FLOOR_ROW`: the Kneser-Ney trigram model's perplexities on the systems' tokens, with their
    units and intervals over the same articles (so a system pairs with it)."""
    metrics: dict[str, float | None] = {}
    units: dict[str, UnitSample] = {}
    interval: dict[str, tuple[float, float]] = {}
    for corpus in corpora:
        cells, corpus_units, bounds = corpus_cells(corpus, trigram_counts[corpus], documents[corpus])
        metrics |= cells
        units |= corpus_units
        interval |= bounds
    return TableRow(FLOOR_ROW, metrics, n=n_documents, interval=interval, units=units,
                    note="competence floor: a count-based model of the train segments")
