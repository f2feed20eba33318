"""Stage ``build_mt_docs``: document-level MT/AE data (Nugget §4, appendix B.1).

Adjacent sentence pairs are concatenated into documents of at most
``data.mt.max_doc_tokens`` subwords of the model's tokenizer (upstream ``tokenizer``),
never splitting a sentence; a sentence pair longer than the limit becomes its own
document cut to the limit (counted as ``truncated_docs``). Documents are assigned to
train/dev/test as wholes, deterministically from ``data.seed``; with ``data.mt.dev_split``
(profile=paper: ``validation``, WMT19's official dev set, on which Nugget §5.1 reports)
dev is that published split's documents instead. The AE objective uses
``source`` as its target; MT uses ``target``. English is the source, Chinese the target.

Offline (profile=tiny) the units are aligned paragraphs of the Debian Reference (see
:mod:`stages.corpora.corpora`). Outputs ``{train,dev,test}.parquet`` with columns
doc_id, source, target, source_sentences, target_sentences, n_source_tokens,
n_target_tokens; ``stats.json`` (every number also an MLflow metric).

With ``data.mt.ae_sources`` (English-only corpora), their units are packed the same way
into ``train_ae.parquet`` (target = source): extra training documents for the AE
objective only (`stages.nugget.nugget_task`), capped by ``data.max_docs`` on their own.
Dev and test stay the parallel corpus's, so every evaluation reads the same held-out set.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq

from stages.corpora.corpora import english_corpus, mt_corpus, mt_offline_sources
from stages.corpora.splits import SPLITS, assign_splits
from stages.corpora.stats import length_stats, scoped
from stages.framework import raydata
from stages.framework.contract import section
from stages.framework.stage import Stage, StageContext
from stages.nugget.artifacts.data import MtDocuments, TokenizerFolder
from stages.nugget.documents import Document, build_documents

if TYPE_CHECKING:
    from stages.nugget.config import MTData

log = logging.getLogger("nugget.build_mt_docs")

SCHEMA = pa.schema([
    ("doc_id", pa.string()),
    ("source", pa.string()),
    ("target", pa.string()),
    ("source_sentences", pa.list_(pa.string())),
    ("target_sentences", pa.list_(pa.string())),
    ("n_source_tokens", pa.int64()),
    ("n_target_tokens", pa.int64()),
])


def mt_documents(cfg: MTData, sources_dir: Path, tokenizer_dir: Path, max_docs: int, seed: int
                 ) -> tuple[dict[str, list[tuple[int, Document]]], dict[str, float], str]:
    """The parallel documents of each split (``(index, doc)`` lists), the build's numbers
    and the source's name. Dev is ``cfg.dev_split``'s documents when set (WMT19's
    official dev set), else ``dev_fraction`` of the documents; test is ``test_fraction``
    of the (training split's) documents; both drawn from ``seed``."""
    corpus = mt_corpus(cfg, sources_dir)
    built = build_documents(corpus, tokenizer_dir, cfg.max_doc_tokens)
    docs = built.docs[:max_docs] if max_docs else built.docs
    splits = assign_splits(len(docs), cfg.dev_fraction, cfg.test_fraction, seed)
    by_split = {split: [(i, d) for i, (d, s) in enumerate(zip(docs, splits, strict=True)) if s == split]
                for split in SPLITS}
    stats: dict[str, float] = {
        "sentence_pairs": built.units,
        "documents_built": len(built.docs),
        "documents": len(docs),
        "truncated_docs": built.truncated,
        "repacked_docs": built.repacked,
        **{k: float(v) for k, v in corpus.notes.items()},
    }
    if cfg.dev_split:
        dev_corpus = mt_corpus(cfg, sources_dir, cfg.dev_split)
        dev = build_documents(dev_corpus, tokenizer_dir, cfg.max_doc_tokens)
        by_split["dev"] = list(enumerate(dev.docs))  # the whole published dev set, never capped
        stats.update({"dev_sentence_pairs": dev.units, "dev_truncated_docs": dev.truncated,
                      **{f"dev_{k}": float(v) for k, v in dev_corpus.notes.items()}})
        stats["documents"] += len(dev.docs)
        stats["truncated_docs"] += dev.truncated
    return by_split, stats, corpus.source


@dataclass(frozen=True)
class MtDocsConfig:
    mt: MTData = section("data.mt")
    seed: int = section("data.seed")
    max_docs: int = section("data.max_docs")


@dataclass(frozen=True)
class MtDocsInputs:
    tokenizer: TokenizerFolder


class BuildMtDocs(Stage[MtDocsConfig, MtDocsInputs, MtDocuments]):
    name = "build_mt_docs"
    resources = {"num_cpus": 0}  # the Ray Data tasks it launches take the CPUs
    fans_out = True  # the executor reserves every CPU for it
    external_paths = ("data.mt.local_files",)

    @classmethod
    def offline_sources(cls, sections: dict[str, Any]) -> tuple[str, ...]:
        return mt_offline_sources(sections["data.mt"])

    def compute(self, ctx: StageContext, config: MtDocsConfig, inputs: MtDocsInputs) -> None:
        raydata.configure()
        cfg, max_docs = config.mt, config.max_docs
        tokenizer_dir = inputs.tokenizer.path
        t0 = time.time()
        by_split, stats, source = mt_documents(cfg, ctx.sources_dir, tokenizer_dir, max_docs, config.seed)
        if cfg.ae_sources:
            english = english_corpus(list(cfg.ae_sources), ctx.sources_dir)
            extra = build_documents(english, tokenizer_dir, cfg.max_doc_tokens)
            ae_docs = extra.docs[:max_docs] if max_docs else extra.docs
            by_split[MtDocuments.AE_SPLIT] = list(enumerate(ae_docs))
            stats.update({"ae_units": extra.units, "ae_documents": len(ae_docs),
                          "ae_truncated_docs": extra.truncated, **{k: float(v) for k, v in english.notes.items()}})
        for split, rows in by_split.items():
            table = pa.Table.from_pylist(
                [
                    {"doc_id": f"{split}-{i}", "source": d.left, "target": d.right,
                     "source_sentences": d.left_sentences, "target_sentences": d.right_sentences,
                     "n_source_tokens": d.n_left, "n_target_tokens": d.n_right}
                    for i, d in rows
                ],
                schema=SCHEMA,
            )
            pq.write_table(table, MtDocuments.split_file(ctx.output_dir, split))
            stats.update(scoped(split, length_stats("source", [d.n_left for _, d in rows])))
            stats.update(scoped(split, length_stats("target", [d.n_right for _, d in rows])))
            stats[f"{split}/sentences_per_doc"] = (
                sum(len(d.left_sentences) for _, d in rows) / len(rows) if rows else 0.0
            )
        stats["wall_seconds"] = time.time() - t0
        log.info("build_mt_docs: %d documents (%d truncated) in %.1fs", stats["documents"], stats["truncated_docs"],
                 stats["wall_seconds"])
        ctx.log_artifact(ctx.write_json("stats.json", {**stats, "source": source}))
        ctx.log_metrics(stats)
