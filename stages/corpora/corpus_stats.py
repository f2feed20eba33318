"""Stage ``corpus_stats``: size and length statistics of an offline corpus.

Reads the documents of ``data.corpus_stats.source`` (docs/offline-data.md), computes
per-document counts with Ray Data (one row per document, batches across the cluster),
and aggregates them: documents, words, sentences, vocabulary and the most frequent
words. Outputs ``documents.parquet`` (per-document counts) and ``stats.json``; every
number in ``stats.json`` is logged as an MLflow metric.

Word = maximal run of letters/digits/apostrophes, lowercased; sentence = text ending in
``.``, ``!`` or ``?`` followed by whitespace. Both are deliberately simple and
tokenizer-free: these statistics describe the corpus, not a model's view of it.
"""

from __future__ import annotations

import re
import statistics
from collections import Counter
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from stages.corpora.artifacts import CorpusStatistics
from stages.corpora.config import CorpusStatsData
from stages.framework import raydata
from stages.framework.contract import NoInputs, section
from stages.framework.stage import Stage, StageContext
from stages.sources.readers import documents

WORD = re.compile(r"[\w']+")
SENTENCE_END = re.compile(r"[.!?](?:\s|$)")


def words(text: str) -> list[str]:
    return [w.lower() for w in WORD.findall(text)]


def document_counts(batch: dict[str, Any]) -> dict[str, Any]:
    """Ray Data batch function: counts for each document of the batch."""
    texts = list(batch["text"])
    return {
        "id": batch["id"],
        "chars": [len(t) for t in texts],
        "words": [len(words(t)) for t in texts],
        "sentences": [max(1, len(SENTENCE_END.findall(t))) for t in texts],
    }


def summarise(rows: dict[str, list[int]], vocab: Counter[str], top: int) -> dict[str, Any]:
    n_words = rows["words"]
    total = sum(n_words)
    return {
        "documents": len(n_words),
        "words_total": total,
        "words_mean": statistics.fmean(n_words),
        "words_median": statistics.median(n_words),
        "words_max": max(n_words),
        "sentences_mean": statistics.fmean(rows["sentences"]),
        "chars_mean": statistics.fmean(rows["chars"]),
        "vocab_size": len(vocab),
        "type_token_ratio": len(vocab) / total if total else 0.0,
        "top_words": [[w, c] for w, c in vocab.most_common(top)],
    }


@dataclass(frozen=True)
class CorpusStatsConfig:
    stats: CorpusStatsData = section("data.corpus_stats")


class CorpusStats(Stage[CorpusStatsConfig, NoInputs, CorpusStatistics]):
    name = "corpus_stats"
    resources = {"num_cpus": 0}  # the Ray Data tasks it launches take the CPUs
    fans_out = True  # the executor reserves every CPU for it

    @classmethod
    def offline_sources(cls, sections: dict[str, Any]) -> tuple[str, ...]:
        return (sections["data.corpus_stats"].source,)

    def compute(self, ctx: StageContext, config: CorpusStatsConfig, inputs: NoInputs) -> None:
        import ray

        raydata.configure()
        cfg = config.stats
        docs = documents(ctx.sources_dir, cfg.source)
        if cfg.max_docs:
            docs = docs[: cfg.max_docs]
        if not docs:
            raise ValueError(f"data.corpus_stats.source={cfg.source!r} yielded no documents")
        ds = ray.data.from_items([{"id": i, "text": t} for i, t in enumerate(docs)])
        counts = ds.map_batches(document_counts, batch_format="numpy", batch_size=64)
        table = pa.Table.from_pandas(counts.to_pandas().sort_values("id"), preserve_index=False)
        pq.write_table(table, ctx.output_dir / "documents.parquet")

        vocab: Counter[str] = Counter()
        for text in docs:
            vocab.update(words(text))
        stats = summarise(table.to_pydict(), vocab, cfg.top_words)
        stats["source"] = cfg.source
        ctx.log_artifact(CorpusStatistics(stats).write(ctx.output_dir))
        ctx.log_metrics({k: v for k, v in stats.items() if isinstance(v, int | float)})
