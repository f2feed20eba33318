"""Stage ``build_lm``: the Nugget2D data (paper §2.5, §5, §6, appendix C).

Outputs (token ids use the base LM's tokenizer from ``prepare_lm``; splits by whole
document: as published where the source publishes them, else with ``data.seed``):

- ``lm_wiki.parquet`` / ``lm_pile.parquet``: autoregressive LM segments
  (``split``, ``document_id``, ``distant``, ``recent``: ``data.lm.distant_tokens`` + ``recent_tokens``);
- ``continuation.parquet``: text-continuation triples (``split``, ``document_id``, ``doc``, ``prompt``,
  ``answer``: up to ``doc_tokens`` / ``prompt_tokens`` / ``answer_tokens``);
- ``document_id`` (``<corpus>-<index>``): the source document (article) a segment or window was
  cut from, the unit the evaluations resample (``eval_lm``, ``eval_nugget2d_ae``);
- ``qa.jsonl`` and ``summarization.jsonl``: records with the appendix-C prompts
  (``document``, ``prompt``, ``full_prompt``, ``answer``, ``stand_in``, ``split``).

``data.lm.source=offline`` (profile=tiny) uses real offline text: WikiText-style =
gensim's Wikipedia articles, Pile-style = the Python documentation; QA and
summarisation are *stand-ins* labelled in every record and in MLflow (``stand_in``):
cloze questions cut from real Wikipedia sentences (for SQuAD) and lead sentence as the
summary of the rest of a real Lee news article (for CNN/DailyMail).
``source=paper`` reads WikiText-103 (``data.lm.wikitext_config``; validation -> dev,
test -> test, as released: each article every line from its `` = Title = `` line to the
next, headings included, as ``build_nugget_lm`` reads it), a Pile sample (split here),
SQuAD (train -> train / dev; its whole validation set -> test, the QA evaluation set) and
CNN/DailyMail 3.0.0 (train / validation / test as published). Local copies keep the
published splits when their glob names ``{split}``; one without is split here (WikiText's
must name it: config load refuses it otherwise, `stages.config.lm_splits`).

A corpus's documents are split once: its LM segments and its continuation windows share
the split, so no document a model trains on as continuation text is scored by eval_lm.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from stages.config.lm_splits import WIKITEXT_LM_SPLITS, publishes_splits
from stages.corpora import paper_sources as paper
from stages.corpora.articles import article_text, wikitext103_documents
from stages.corpora.corpora import offline_articles
from stages.corpora.splits import assign_splits
from stages.corpora.stats import length_stats
from stages.corpora.tokens import encode_texts
from stages.framework import raydata
from stages.framework.contract import section
from stages.framework.stage import Stage, StageContext
from stages.nugget2d.artifacts import LMRecords, PreparedLM
from stages.nugget2d.lm_builders import (
    PILE_STAND_IN,
    QA_STAND_IN,
    SUMMARY_STAND_IN,
    WIKI_STAND_IN,
    cloze_qa,
    continuation_triples,
    lead_summary,
    lm_segments,
    qa_record,
    summary_record,
)
from stages.sources.readers import lee_documents

if TYPE_CHECKING:
    from stages.nugget2d.config import LMData

TRAIN_OR_DEV = "train+dev"  # a published train split: dev_fraction of it becomes dev


@dataclass
class Pool:
    """Raw items of one use and the split each comes with: a published split name,
    `TRAIN_OR_DEV`, or None (assigned here, train / dev / test by ``dev_fraction``)."""

    items: list
    labels: list[str | None]

    @classmethod
    def unsplit(cls, items: list) -> Pool:
        return cls(items, [None] * len(items))


def _published(load: Callable[[str], list], splits: dict[str, str], local_files: str) -> Pool:
    """The published ``splits`` (our split -> HF split) of one dataset; local files
    without ``{split}`` are one pool, split here (`publishes_splits`)."""
    if not publishes_splits(local_files):
        return Pool.unsplit(load("train"))
    items: list = []
    labels: list[str | None] = []
    for ours, theirs in splits.items():
        rows = load(theirs)
        items += rows
        labels += [ours] * len(rows)
    return Pool(items, labels)


def _paper_pools(cfg: LMData) -> dict[str, Pool]:
    """WikiText-103 validation / test as released (each article every line from its title
    to the next: table 1 scores the benchmark text, headings and all), a Pile sample, SQuAD
    (train; the whole validation set is the QA test set, Nugget2D §6.2) and CNN/DailyMail
    3.0.0 as published."""
    def wiki(split: str) -> list[str]:
        rows = paper.load_rows("wikitext103", split, cfg.wiki_files, cfg.wikitext_config)
        return wikitext103_documents(paper.texts_from_rows(rows))

    return {
        "wiki": _published(wiki, WIKITEXT_LM_SPLITS, cfg.wiki_files),
        "pile": Pool.unsplit(paper.texts_from_rows(paper.load_rows("pile", "train", cfg.pile_files))),
        "qa": _published(lambda split: paper.squad_from_rows(paper.load_rows("squad", split, cfg.squad_files)),
                         {TRAIN_OR_DEV: "train", "test": "validation"}, cfg.squad_files),
        "summ": _published(lambda split: paper.cnn_from_rows(paper.load_rows("cnn_dailymail", split, cfg.cnn_files)),
                           {"train": "train", "dev": "validation", "test": "test"}, cfg.cnn_files),
    }


def _texts(cfg: LMData, sources_dir: Path, cap: int) -> dict[str, Pool]:
    """Raw material per use: wiki/pile LM text, QA passages, (document, summary) pairs."""
    if cfg.source == "paper":
        return _paper_pools(cfg)
    wiki = [article_text(a) for a in offline_articles("gensim_wiki", sources_dir)]
    pile = [article_text(a) for a in offline_articles("python_docs", sources_dir)]
    # SQuAD-sized passages: single paragraphs of 30-300 words
    passages = [p for w in wiki for p in re.split(r"\n+", w) if 30 <= len(p.split()) <= 300]
    take = (lambda xs: xs[:cap]) if cap else (lambda xs: xs)
    raw = {"wiki": take(wiki), "pile": take(pile), "qa": take(passages), "summ": take(lee_documents(sources_dir))}
    return {name: Pool.unsplit(items) for name, items in raw.items()}


def _labels(given: Sequence[str | None], cfg: LMData, seed: int) -> list[str]:
    """Each item's split: as given, else assigned by ``cfg.dev_fraction`` (None: train /
    dev / test; `TRAIN_OR_DEV`: train / dev)."""
    out = list(given)
    for kind, test_fraction in ((None, cfg.dev_fraction), (TRAIN_OR_DEV, 0.0)):
        where = [i for i, g in enumerate(given) if g == kind]
        if where:
            for i, split in zip(where, assign_splits(len(where), cfg.dev_fraction, test_fraction, seed), strict=True):
                out[i] = split
    return [str(x) for x in out]


def _write_rows(path: Path, rows: list[dict]) -> None:
    if not rows:
        raise ValueError(f"build_lm: no rows for {path.name}; the source texts are too short")
    pq.write_table(pa.Table.from_pylist(rows), path)


def _by_split(docs: Sequence[tuple[str, list[int]]], splits: Sequence[str]) -> dict[str, list[tuple[str, list[int]]]]:
    """Per split, its (document id, token ids) in corpus order."""
    return {s: [x for x, t in zip(docs, splits, strict=True) if t == s] for s in ("train", "dev", "test")}


def _named(corpus: str, docs: Sequence[list[int]]) -> list[tuple[str, list[int]]]:
    """Each document of ``corpus`` with its id ``<corpus>-<index>``: the independent unit the
    evaluations resample (the segments and windows cut from one document are not independent)."""
    return [(f"{corpus}-{i}", ids) for i, ids in enumerate(docs)]


@dataclass(frozen=True)
class BuildLMConfig:
    lm: LMData = section("data.lm")
    seed: int = section("data.seed")
    max_docs: int = section("data.max_docs")


@dataclass(frozen=True)
class BuildLMInputs:
    prepared: PreparedLM


class BuildLM(Stage[BuildLMConfig, BuildLMInputs, LMRecords]):
    name = "build_lm"
    resources = {"num_cpus": 0}  # tokenisation runs on Ray Data
    fans_out = True  # the executor reserves every CPU for it
    external_paths = ("data.lm.squad_files", "data.lm.cnn_files", "data.lm.pile_files", "data.lm.wiki_files")

    @classmethod
    def offline_sources(cls, sections: dict[str, Any]) -> tuple[str, ...]:
        offline = sections["data.lm"].source == "offline"
        return ("gensim_wiki", "python_docs", "gensim_lee") if offline else ()

    def compute(self, ctx: StageContext, config: BuildLMConfig, inputs: BuildLMInputs) -> None:
        raydata.configure()
        cfg, seed = config.lm, config.seed
        tok_dir = inputs.prepared.base().path  # every role shares this tokenizer (prepare_lm checks)
        raw = _texts(cfg, ctx.sources_dir, config.max_docs)
        metrics: dict[str, float] = {}
        rng = np.random.default_rng(seed)

        ids = {name: encode_texts(raw[name].items, tok_dir) for name in ("wiki", "pile")}  # once each
        # one document split per corpus for its LM segments and its continuation windows: the
        # compressor (the AR model's frozen scorer) never trains on a document eval_lm scores
        splits = {name: _labels(raw[name].labels, cfg, seed) for name in ("wiki", "pile")}
        named = {name: _named(name, ids[name]) for name in ("wiki", "pile")}
        for name in ("wiki", "pile"):
            docs = _by_split(named[name], splits[name])
            rows = [{"split": s, LMRecords.DOCUMENT: doc_id, **seg} for s, d in docs.items() for doc_id, doc in d
                    for seg in lm_segments([doc], cfg.distant_tokens, cfg.recent_tokens)]
            _write_rows(LMRecords.segments_file(ctx.output_dir, name), rows)
            metrics.update({f"lm_{name}/segments": len(rows)})
        both = _by_split(named["wiki"] + named["pile"], splits["wiki"] + splits["pile"])
        triples = [{"split": s, LMRecords.DOCUMENT: doc_id, **t} for s, d in both.items() for doc_id, doc in d
                   for t in continuation_triples([doc], cfg.doc_tokens, cfg.prompt_tokens, cfg.answer_tokens)]
        _write_rows(LMRecords.continuation_file(ctx.output_dir), triples)
        metrics.update({"continuation/triples": len(triples),
                        **length_stats("continuation/answer_tokens", [len(t["answer"]) for t in triples])})

        if cfg.source == "paper":
            qa = [(qa_record(c, q, a[0], aliases=a[1:]), split)
                  for (c, q, a), split in zip(raw["qa"].items, raw["qa"].labels, strict=True)]
            summ = [(summary_record(d, s), split)
                    for (d, s), split in zip(raw["summ"].items, raw["summ"].labels, strict=True)]
        else:
            qa = [(r, None) for p in raw["qa"].items if (r := cloze_qa(p, rng)) is not None]
            summ = [(r, None) for d in raw["summ"].items if (r := lead_summary(d)) is not None]
        for name, labelled in (("qa", qa), ("summarization", summ)):
            if not labelled:
                raise ValueError(f"build_lm: no {name} records could be built from the source texts")
            records = [r for r, _ in labelled]
            record_splits = _labels([split for _, split in labelled], cfg, seed)
            with open(LMRecords.records_file(ctx.output_dir, name), "w") as fh:
                for i, (rec, split) in enumerate(zip(records, record_splits, strict=True)):
                    fh.write(json.dumps({"id": f"{name}-{i}", "split": split, **rec}) + "\n")
            metrics[f"{name}/records"] = len(records)
            metrics.update(length_stats(f"{name}/document_words", [len(r["document"].split()) for r in records]))
        ctx.write_json("stats.json", {
            **metrics,
            "stand_ins": {} if cfg.source == "paper" else {"qa": QA_STAND_IN, "summarization": SUMMARY_STAND_IN,
                                                           "wiki": WIKI_STAND_IN, "pile": PILE_STAND_IN},
        })
        ctx.set_tags({"stand_in.qa": QA_STAND_IN, "stand_in.summarization": SUMMARY_STAND_IN}
                     if cfg.source != "paper" else {"stand_in": "none"})
        ctx.log_metrics(metrics)
