"""BM25 mining equals an independent bm25s call; exclusions and windows hold."""

from __future__ import annotations

import bm25s
import numpy as np
import pytest

from stages.nugget.bm25 import BM25Config, block_window, bm25_tokens, mine_pool, mine_windows

WORDS = "light water earth heaven seed fruit tree day night beast fowl fish king city river".split()


def _docs(n, seed):
    rng = np.random.default_rng(seed)
    return [" ".join(rng.choice(WORDS, size=int(rng.integers(5, 25)))) for _ in range(n)]


def _independent(corpus_tokens, query, k, cfg):
    r = bm25s.BM25(k1=cfg.k1, b=cfg.b, method=cfg.variant)
    r.index(corpus_tokens, show_progress=False)
    q = [t for t in query if t in r.vocab_dict]
    return r.get_scores(q)


@pytest.mark.parametrize("variant", ["lucene", "robertson"])
def test_window_negatives_equal_independent_bm25s_and_stay_in_window(variant):
    cfg = BM25Config(variant=variant, k1=1.2, b=0.7)
    left, right = _docs(120, 0), _docs(120, 1)
    lt, rt = [bm25_tokens(d) for d in left], [bm25_tokens(d) for d in right]
    mined = mine_windows(lt, rt, range(120), window=40, block=8, n_neg=5, cfg=cfg)
    for i, (cands, answer) in enumerate(mined):
        lo, hi = block_window(i, 120, 40, 8)
        assert lo <= i < hi and hi - lo == 40
        assert cands[answer] == i and len(set(cands)) == 6
        negatives = [c for c in cands if c != i]
        assert all(lo <= c < hi for c in negatives)
        ref = np.asarray(_independent(rt[lo:hi], lt[i], 6, cfg))
        ref[i - lo] = -np.inf
        best = sorted(range(hi - lo), key=lambda j: (-ref[j], j))[:5]
        assert sorted(c - lo for c in negatives) == sorted(best)


def test_pool_negatives_never_come_from_the_query_article():
    cfg = BM25Config()
    pool = _docs(60, 2)
    groups = np.repeat(np.arange(12), 5)
    queries = [bm25_tokens(d) for d in _docs(12, 3)]
    positives = [g * 5 + 1 for g in range(12)]
    mined = mine_pool(queries, [bm25_tokens(d) for d in pool], groups, list(range(12)), positives, 7, cfg)
    for g, (cands, answer) in enumerate(mined):
        assert cands[answer] == positives[g]
        assert all(groups[c] != g for c in cands if c != positives[g])
        assert len(cands) == 8


def test_too_few_candidates_is_an_error():
    toks = [bm25_tokens(d) for d in _docs(4, 0)]
    with pytest.raises(ValueError, match="negatives needed"):
        mine_windows(toks, toks, range(4), window=4, block=1, n_neg=5, cfg=BM25Config())
