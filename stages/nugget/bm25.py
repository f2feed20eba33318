"""BM25 negatives mining with ``bm25s`` (variant, k1 and b fixed in config).

Tokenisation (the same for queries, candidates and the rank_bm25 benchmark): lowercase,
then maximal runs of Unicode word characters (``\\w+``); no stemming, no stop-word
removal, so scores depend only on the text and (variant, k1, b).

Ranking: a query scores every candidate of its index (``BM25.get_scores``); excluded
candidates (the positive; for reranking, every section of the query's own article) are
masked; the ``n`` best remaining are the negatives, ties broken by lower index. The
task's candidates are the negatives plus the positive, ordered by score (as in the
authors' release, where the answer index varies), and ``answer`` is the positive's index.

- :func:`mine_windows` (paraphrase identification): candidates are the paraphrases
  within a window of ``window`` documents around the query (Nugget app. A.1). Queries are
  processed in blocks of ``block`` that share one window index centred on the block, so a
  query is never more than ``block/2`` from its window's centre; ``block=1`` is exact.
- :func:`mine_pool` (reranking): one index over a pool, with per-query exclusions.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

WORD = re.compile(r"\w+")


@dataclass(frozen=True)
class BM25Config:
    variant: str = "lucene"
    k1: float = 1.5
    b: float = 0.75


def bm25_tokens(text: str) -> list[str]:
    return WORD.findall(text.lower())


def build_index(corpus_tokens: Sequence[list[str]], cfg: BM25Config):
    import bm25s

    retriever = bm25s.BM25(k1=cfg.k1, b=cfg.b, method=cfg.variant)
    retriever.index([list(t) for t in corpus_tokens], show_progress=False)
    return retriever


def scores(retriever, query_tokens: list[str]) -> np.ndarray:
    """BM25 score of every indexed document (unknown query terms contribute nothing)."""
    known = [t for t in query_tokens if t in retriever.vocab_dict]
    n_docs = retriever.scores["num_docs"]
    if not known:
        return np.zeros(n_docs, dtype=np.float32)
    return np.asarray(retriever.get_scores(known), dtype=np.float32)


def rank_candidates(score: np.ndarray, excluded: np.ndarray, positive: int, n: int) -> tuple[list[int], int]:
    """(candidate indices: n negatives + the positive, by score; answer position)."""
    allowed = np.flatnonzero(~excluded)
    if len(allowed) < n:
        raise ValueError(f"only {len(allowed)} candidates left after exclusions, {n} negatives needed")
    order = allowed[np.lexsort((allowed, -score[allowed]))][:n]
    cands = sorted([*order.tolist(), positive], key=lambda j: (-float(score[j]), j != positive, j))
    return cands, cands.index(positive)


def window_bounds(center: int, n: int, window: int) -> tuple[int, int]:
    """[lo, hi) of the ``window`` documents centred on ``center`` (shifted at the ends)."""
    lo = min(max(0, center - window // 2), max(0, n - window))
    return lo, min(n, lo + window)


def block_window(i: int, n: int, window: int, block: int) -> tuple[int, int]:
    """The window shared by query ``i``'s block (see the module docstring)."""
    start = (i // block) * block
    end = min(n, start + block)
    return window_bounds((start + end) // 2, n, window)


def mine_windows(
    query_tokens: Sequence[list[str]],
    cand_tokens: Sequence[list[str]],
    queries: Sequence[int],
    window: int,
    block: int,
    n_neg: int,
    cfg: BM25Config,
) -> list[tuple[list[int], int]]:
    """For each query index i in ``queries`` (paraphrase i is its positive): global
    candidate indices and answer position. ``queries`` should be whole blocks."""
    n = len(cand_tokens)
    if window < block:
        raise ValueError(f"window={window} must be >= window_block={block} (a query must lie in its window)")
    out, cached = [], None
    for i in queries:
        lo, hi = block_window(i, n, window, block)
        if cached is None or cached[0] != (lo, hi):
            cached = ((lo, hi), build_index(cand_tokens[lo:hi], cfg))
        retriever = cached[1]
        score = scores(retriever, query_tokens[i])
        excluded = np.zeros(hi - lo, dtype=bool)
        excluded[i - lo] = True
        local, answer = rank_candidates(score, excluded, i - lo, n_neg)
        out.append(([lo + j for j in local], answer))
    return out


def mine_pool(
    query_tokens: Sequence[list[str]],
    pool_tokens: Sequence[list[str]],
    pool_groups: np.ndarray,
    query_groups: Sequence[int],
    positives: Sequence[int],
    n_neg: int,
    cfg: BM25Config,
) -> list[tuple[list[int], int]]:
    """Negatives from the pool minus the documents of the query's own group (article)."""
    retriever = build_index(pool_tokens, cfg)
    out = []
    for q, group, pos in zip(query_tokens, query_groups, positives, strict=False):
        score = scores(retriever, q)
        out.append(rank_candidates(score, pool_groups == group, pos, n_neg))
    return out
