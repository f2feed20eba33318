"""Stage ``build_nugget_lm``: the articles the Nugget LM (Nugget §6.2, table 3) reads.

``data.nugget_lm.source=wikitext103`` (profile=paper): WikiText-103 train / validation /
test as published (the table is on the test split), each article every line from its
`` = Title = `` line to the next (`stages.corpora.articles.wikitext103_documents`);
``wikitext-103-v1`` keeps ``<unk>``, the out-of-vocabulary words the evaluation excludes.
``gensim_wiki`` (profile=tiny): the offline Wikipedia articles as WikiText-style text (a
labelled stand-in), split train / dev / test by article with ``data.seed``.

Articles are tokenised with the Nugget model's tokenizer (``tokenizer`` stage), with per
token the flags word-level perplexity needs (`stages.corpora.tokens.word_flags`).
Output: `stages.nugget.artifacts.data.NuggetLMCorpus`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq

from stages.corpora import paper_sources as paper
from stages.corpora.articles import article_text, wikitext103_documents
from stages.corpora.corpora import offline_articles
from stages.corpora.splits import SPLITS, assign_splits
from stages.corpora.stats import length_stats
from stages.corpora.tokens import encode_with_words
from stages.framework import raydata
from stages.framework.contract import section
from stages.framework.stage import Stage, StageContext
from stages.nugget.artifacts.data import NuggetLMCorpus, TokenizerFolder

if TYPE_CHECKING:
    from stages.nugget.config import NuggetLMData

WIKITEXT_SPLITS = {"train": "train", "dev": "validation", "test": "test"}
STAND_IN = "offline Wikipedia articles (gensim's test dump), split here: a stand-in for WikiText-103"


def _articles(cfg: NuggetLMData, sources_dir: Path, seed: int) -> dict[str, list[str]]:
    """Article texts per split (``max_docs`` caps each published split / the pool)."""
    cap = (lambda xs: xs[: cfg.max_docs]) if cfg.max_docs else (lambda xs: xs)
    if cfg.source == "wikitext103":
        return {ours: cap(wikitext103_documents(paper.texts_from_rows(
                    paper.load_rows("wikitext103", theirs, cfg.wiki_files, cfg.wikitext_config))))
                for ours, theirs in WIKITEXT_SPLITS.items()}
    texts = cap([article_text(a) for a in offline_articles("gensim_wiki", sources_dir)])
    labels = assign_splits(len(texts), cfg.dev_fraction, cfg.test_fraction, seed)
    return {s: [t for t, label in zip(texts, labels, strict=True) if label == s] for s in SPLITS}


SCHEMA = pa.schema([("ids", pa.list_(pa.int32())), ("word_start", pa.list_(pa.bool_())),
                    ("oov", pa.list_(pa.bool_()))])
WRITE_ROWS = 256  # articles per parquet row group


def write_split(docs: Iterable[dict[str, list]], min_tokens: int, path: Path) -> dict[str, Any]:
    """Write the articles of ``docs`` with at least ``min_tokens`` tokens to ``path`` as
    they stream in; returns their counts (``articles``, ``words``, ``oov_words``) and
    ``lengths`` (tokens per article)."""
    counts: dict[str, Any] = {"articles": 0, "words": 0, "oov_words": 0, "lengths": []}
    with pq.ParquetWriter(path, SCHEMA) as writer:
        rows: list[dict[str, list]] = []
        for d in docs:
            if len(d["ids"]) < min_tokens:
                continue
            counts["articles"] += 1
            counts["words"] += sum(d["word_start"])
            counts["oov_words"] += sum(s and o for s, o in zip(d["word_start"], d["oov"], strict=True))
            counts["lengths"].append(len(d["ids"]))
            rows.append(d)
            if len(rows) == WRITE_ROWS:
                writer.write_table(pa.Table.from_pylist(rows, schema=SCHEMA))
                rows = []
        if rows:
            writer.write_table(pa.Table.from_pylist(rows, schema=SCHEMA))
    return counts


@dataclass(frozen=True)
class NuggetLMDataConfig:
    nugget_lm: NuggetLMData = section("data.nugget_lm")
    seed: int = section("data.seed")


@dataclass(frozen=True)
class NuggetLMDataInputs:
    tokenizer: TokenizerFolder


class BuildNuggetLM(Stage[NuggetLMDataConfig, NuggetLMDataInputs, NuggetLMCorpus]):
    name = "build_nugget_lm"
    resources = {"num_cpus": 0}  # tokenisation runs on Ray Data
    fans_out = True  # the executor reserves every CPU for it
    external_paths = ("data.nugget_lm.wiki_files",)

    @classmethod
    def offline_sources(cls, sections: dict[str, Any]) -> tuple[str, ...]:
        return ("gensim_wiki",) if sections["data.nugget_lm"].source == "gensim_wiki" else ()

    def compute(self, ctx: StageContext, config: NuggetLMDataConfig, inputs: NuggetLMDataInputs) -> None:
        raydata.configure()
        cfg = config.nugget_lm
        tokenizer = inputs.tokenizer.path
        texts = _articles(cfg, ctx.sources_dir, config.seed)
        metrics: dict[str, float] = {}
        for split in SPLITS:
            counts = write_split(encode_with_words(texts[split], tokenizer), cfg.min_doc_tokens,
                                 NuggetLMCorpus.split_file(ctx.output_dir, split))
            if not counts["articles"]:
                raise ValueError(f"build_nugget_lm: split {split!r} has no article of >= "
                                 f"data.nugget_lm.min_doc_tokens={cfg.min_doc_tokens} tokens")
            lengths = counts.pop("lengths")
            metrics.update({f"{split}/{k}": v for k, v in counts.items()})
            metrics.update(length_stats(f"{split}/article_tokens", lengths))
            print(f"[build_nugget_lm] {split}: {counts['articles']} articles, {counts['words']} words "
                  f"({counts['oov_words']} out of vocabulary)", flush=True)
        stand_in = "" if cfg.source == "wikitext103" else STAND_IN
        ctx.write_json("stats.json", {**metrics, "source": cfg.source, "stand_in": stand_in})
        ctx.set_tags({"stand_in": stand_in or "none"})
        ctx.log_metrics(metrics)
