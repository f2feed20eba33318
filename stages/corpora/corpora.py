"""The one interface over sources: parallel streams and sectioned articles.

Builders ask for a kind of corpus, not a source: :func:`mt_corpus` (English–Chinese
sentence pairs), :func:`english_corpus` (English-only units for autoencoding, as pairs
of a unit with itself), :func:`pi_corpus` (English paraphrase pairs in document order)
and :func:`rr_articles`. Each dispatches on the configured source to an offline reader
(docs/offline-data.md) or a paper adapter (:mod:`stages.corpora.paper_sources`), and returns
records plus counted skips. An empty result is an error naming the source.

Units of the offline stand-ins: the Debian Reference is aligned by paragraph, not by
sentence (sentence alignment across languages would be a guess), so an MT "sentence" is
a paragraph; the Bible is aligned by verse, and each book is a stream (documents never
cross books).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from stages.corpora import paper_sources as paper
from stages.corpora.articles import Article, from_sections, from_wiki_markup, from_wikitext103
from stages.corpora.text import split_sentences
from stages.sources import debian_reference, python_docs, sword
from stages.sources.readers import lee_documents, wiki_articles
from stages.sources.registry import deb_root

if TYPE_CHECKING:
    from stages.nugget.config import MTData, PIData, RRData


@dataclass
class ParallelCorpus:
    """Aligned (left, right) units; each stream is one run of adjacent units."""

    source: str
    streams: list[list[tuple[str, str]]]
    joiners: tuple[str, str]  # how units of each side are concatenated into a document
    notes: dict[str, float] = field(default_factory=dict)

    @property
    def n_units(self) -> int:
        return sum(len(s) for s in self.streams)


def _require(source: str, n: int, what: str) -> None:
    if n == 0:
        raise ValueError(f"source {source!r} yielded no {what}: refusing to build an empty dataset")


def _clean_streams(streams: list[list[tuple[str, str]]]) -> tuple[list[list[tuple[str, str]]], int]:
    """Drop pairs with an empty side (counted), and empty streams."""
    kept, dropped = [], 0
    for s in streams:
        good = [(a.strip(), b.strip()) for a, b in s if a.strip() and b.strip()]
        dropped += len(s) - len(good)
        if good:
            kept.append(good)
    return kept, dropped


def mt_corpus(cfg: MTData, sources_dir: Path, split: str = "") -> ParallelCorpus:
    """English (left) – Chinese (right) units for build_mt_docs and the tokenizer
    (source wmt19: of published split ``split``, default ``cfg.hf_split``)."""
    notes: dict[str, float] = {}
    if cfg.source == "debian_reference":
        if split:
            raise ValueError(f"data.mt.source: debian_reference has no published split {split!r}")
        manual = debian_reference.read(sources_dir)
        streams = [pairs for _, pairs in manual.chapters]
        notes["skipped_unaligned_chapters"] = len(manual.skipped_chapters)
    elif cfg.source == "wmt19":
        rows = paper.load_rows("wmt19", split or cfg.hf_split, cfg.local_files, cfg.hf_config)
        streams = [paper.wmt_pairs_from_rows(rows)]
    else:
        raise ValueError(f"data.mt.source: unknown source {cfg.source!r}")
    streams, dropped = _clean_streams(streams)
    notes["skipped_empty_pairs"] = dropped
    _require(cfg.source, sum(map(len, streams)), "sentence pairs")
    return ParallelCorpus(cfg.source, streams, (" ", ""), notes)


ENGLISH_SOURCES = ("sword_bible", "gensim_wiki", "python_docs", "gensim_lee")


def mt_offline_sources(cfg: MTData) -> tuple[str, ...]:
    """The offline sources that :func:`mt_corpus` and the ``ae_sources`` of
    :func:`english_corpus` read for the ``data.mt`` section ``cfg`` (for cache keys)."""
    return (("debian_reference",) if cfg.source == "debian_reference" else ()) + tuple(cfg.ae_sources)


def offline_articles(source: str, sources_dir: Path) -> list[Article]:
    """Sectioned articles of an offline source: ``gensim_wiki`` or ``python_docs``."""
    if source == "gensim_wiki":
        return [from_wiki_markup(t, m) for t, m in wiki_articles(sources_dir)]
    if source == "python_docs":
        return [from_sections(t, s) for t, s in python_docs.read(sources_dir)]
    raise ValueError(f"no offline article reader for source {source!r}")


def english_texts(source: str, sources_dir: Path) -> list[list[str]]:
    """Texts in reading order, one list per book / article / document, before any
    sentence splitting: KJV verses, Wikipedia and Python-documentation prose sections,
    Lee documents."""
    if source == "sword_bible":
        books: dict[str, list[str]] = {}
        kjv = sword.module_dir(deb_root(sources_dir, "sword_bible", "sword-text-kjv"))
        for (book, _, _), text in sword.verses(kjv).items():
            books.setdefault(book, []).append(text)
        return list(books.values())
    if source in ("gensim_wiki", "python_docs"):
        return [[text for _, text in a.sections] for a in offline_articles(source, sources_dir)]
    if source == "gensim_lee":
        return [[doc] for doc in lee_documents(sources_dir)]
    raise ValueError(f"data.mt.ae_sources: unknown source {source!r}; use some of {list(ENGLISH_SOURCES)}")


def split_streams(source: str, texts: list[list[str]],
                  split: Callable[[str], list[str]] = split_sentences) -> list[list[str]]:
    """`english_texts` as units: each text's sentences by ``split``; a KJV verse stays one
    unit (the Bible is aligned, and read, by verse)."""
    if source == "sword_bible":
        return texts
    return [[u for text in doc for u in split(text)] for doc in texts]


def english_streams(source: str, sources_dir: Path) -> list[list[str]]:
    """Units in reading order, one stream per book / article / document: KJV verses,
    sentences of Wikipedia and Python-documentation prose sections, Lee sentences (the
    rule-based `split_sentences`)."""
    return split_streams(source, english_texts(source, sources_dir))


def english_corpus(sources: list[str], sources_dir: Path) -> ParallelCorpus:
    """English-only units of ``sources`` for autoencoding, each paired with itself (so
    the document packing of parallel corpora applies unchanged)."""
    streams: list[list[tuple[str, str]]] = []
    for source in sources:
        found = [[(u, u) for u in stream] for stream in english_streams(source, sources_dir)]
        _require(source, sum(map(len, found)), "English units")
        streams += found
    streams, dropped = _clean_streams(streams)
    return ParallelCorpus("+".join(sources), streams, (" ", " "), {"ae_skipped_empty_units": dropped})


def pi_corpus(cfg: PIData, sources_dir: Path) -> ParallelCorpus:
    """English paraphrase pairs in document order for build_pi."""
    if cfg.source == "sword_bible":
        left = sword.module_dir(deb_root(sources_dir, "sword_bible", "sword-text-kjv"))
        right = sword.module_dir(deb_root(sources_dir, "sword_bible", "sword-text-web"))
        books: dict[str, list[tuple[str, str]]] = {}
        for (book, _, _), a, b in sword.aligned_verses(left, right):
            books.setdefault(book, []).append((a, b))
        streams = list(books.values())
    elif cfg.source == "parabank":
        if not cfg.parabank_path:
            raise ValueError("data.pi.parabank_path: must be set when data.pi.source=parabank")
        streams = [paper.parabank_pairs(cfg.parabank_path)]
    else:
        raise ValueError(f"data.pi.source: unknown source {cfg.source!r}")
    streams, dropped = _clean_streams(streams)
    _require(cfg.source, sum(map(len, streams)), "paraphrase pairs")
    return ParallelCorpus(cfg.source, streams, (" ", " "), {"skipped_empty_pairs": dropped})


def rr_articles(cfg: RRData, sources_dir: Path) -> list[Article]:
    """Sectioned articles for build_rr (lead first)."""
    if cfg.source in ("gensim_wiki", "python_docs"):
        arts = offline_articles(cfg.source, sources_dir)
    elif cfg.source == "wikitext103":
        rows = paper.load_rows("wikitext103", "train", cfg.local_files)
        arts = from_wikitext103(paper.texts_from_rows(rows))
    else:
        raise ValueError(f"data.rr.source: unknown source {cfg.source!r}")
    _require(cfg.source, len(arts), "articles")
    return arts
