"""From a parallel corpus to sentence-preserving documents with exact subword counts.

Shared by build_mt_docs (keep every sentence) and build_pi (keep each with p per side):
count unit subwords on Ray Data, pack each stream (:mod:`stages.nugget.packing`),
re-count the joined documents exactly, re-pack the rare overflows, and cut the text of
single over-long units (``truncated`` documents, counted by the caller).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from stages.corpora.corpora import ParallelCorpus
from stages.corpora.tokens import count_tokens, exact_count, truncate
from stages.nugget.packing import PackedDoc, enforce_limit, pack_parallel

log = logging.getLogger("nugget.datasets")

# subword counts of texts with the tokenizer in a folder (`count_tokens`: on Ray Data)
TokenCounter = Callable[[list[str], Path], list[int]]


@dataclass
class Document:
    left_sentences: list[str]
    right_sentences: list[str]
    left: str
    right: str
    n_left: int
    n_right: int
    truncated: bool


@dataclass
class DocumentSet:
    docs: list[Document]
    units: int
    truncated: int
    repacked: int
    empty_skipped: int
    deleted_left: int
    deleted_right: int


def build_documents(
    corpus: ParallelCorpus,
    tokenizer_dir: Path,
    limit: int,
    keep_prob: float = 1.0,
    seed: int = 0,
    counter: TokenCounter = count_tokens,
) -> DocumentSet:
    """Documents of ``corpus`` under ``limit`` subwords (module docstring); ``counter``
    counts many texts at once (`count_tokens` on Ray Data; a caller without Ray passes
    `stages.corpora.tokens.count_tokens_here`)."""
    jl, jr = corpus.joiners
    flat = [pair for stream in corpus.streams for pair in stream]
    log.info("%s: counting subwords of %d unit pairs", corpus.source, len(flat))
    counts = counter([jl + a for a, _ in flat] + [jr + b for _, b in flat], tokenizer_dir)
    left_counts, right_counts = counts[: len(flat)], counts[len(flat) :]

    rng = np.random.default_rng(seed)
    packed: list[tuple[int, PackedDoc]] = []  # (offset of the stream in flat, doc)
    totals = dict(truncated=0, empty_skipped=0, deleted_left=0, deleted_right=0)
    offset = 0
    for stream in corpus.streams:
        n = len(stream)
        res = pack_parallel(left_counts[offset : offset + n], right_counts[offset : offset + n],
                            limit, keep_prob, rng if keep_prob < 1.0 else None)
        packed += [(offset, d) for d in res.docs]
        for k in totals:
            totals[k] += getattr(res, k)
        offset += n

    def text(offset: int, units: list[int], side: int) -> str:
        return (jl, jr)[side].join(flat[offset + i][side] for i in units)

    def exact_counter(offset: int, side: int) -> Callable[[list[int]], int]:
        """The exact subword count of one side's joined text of units of the stream at ``offset``."""
        return lambda units: exact_count(text(offset, units, side), tokenizer_dir)

    exact = counter([text(o, d.left, 0) for o, d in packed] + [text(o, d.right, 1) for o, d in packed],
                         tokenizer_dir)
    fixed: list[tuple[int, PackedDoc]] = []
    repacked = 0
    for idx, (o, d) in enumerate(packed):
        within, n = enforce_limit(
            [d], [exact[idx]], [exact[len(packed) + idx]], exact_counter(o, 0), exact_counter(o, 1), limit
        )
        repacked += n
        fixed += [(o, x) for x in within]

    drafts = []
    for o, d in fixed:
        left, right = text(o, d.left, 0), text(o, d.right, 1)
        ls, rs = [flat[o + i][0] for i in d.left], [flat[o + i][1] for i in d.right]
        if d.truncated:  # one over-long unit: cut each side to the limit
            left, right = truncate(left, tokenizer_dir, limit), truncate(right, tokenizer_dir, limit)
            ls, rs = [left], [right]
        drafts.append((ls, rs, left, right, d.truncated))
    # final counts of the texts as written (what every statistic reports)
    final = counter([x[2] for x in drafts] + [x[3] for x in drafts], tokenizer_dir)
    docs = [
        Document(ls, rs, left, right, final[i], final[len(drafts) + i], trunc)
        for i, (ls, rs, left, right, trunc) in enumerate(drafts)
    ]
    over = [i for i, d in enumerate(docs) if max(d.n_left, d.n_right) > limit]
    if over:  # cannot happen by construction; fail loudly rather than write it
        first = docs[over[0]]
        raise AssertionError(f"{len(over)} documents exceed {limit} subwords, e.g. #{over[0]} ({first.n_left} / "
                             f"{first.n_right} subwords, truncated={first.truncated}: {first.left[:120]!r} / "
                             f"{first.right[:120]!r})")
    return DocumentSet(docs, len(flat), repacked=repacked, **totals)
