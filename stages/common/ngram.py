"""An interpolated Kneser-Ney trigram model over token ids: the language-modelling floor.

A perplexity means something beside what a simple count-based model reaches on the same tokens:
an LM that does not beat a trigram model fitted on its own training split does not model the
language in any sense a reader cares about (`stages.common.floors`). Interpolated Kneser-Ney
(Chen & Goodman 1998, with one absolute discount ``D`` per order from the training counts,
D = n1 / (n1 + 2 n2)), interpolated down to a uniform distribution over the vocabulary, so
every token of the vocabulary has a probability and the distribution of each context sums to 1
(tests/evaluation/test_ngram.py).

Counts are kept as sorted int64 keys (``(u V + v) V + w``) in numpy arrays, so fitting a few
million tokens takes seconds and little memory.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

ORDER = 3


def _lookup(keys: np.ndarray, values: np.ndarray, query: np.ndarray) -> np.ndarray:
    """``values`` at ``query``'s positions in sorted ``keys`` (0 where a query key is absent)."""
    if not len(keys):
        return np.zeros(len(query), dtype=np.float64)
    at = np.clip(np.searchsorted(keys, query), 0, len(keys) - 1)
    return np.where(keys[at] == query, values[at], 0).astype(np.float64)


def _grouped(keys: np.ndarray, weights: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Unique ``keys`` (sorted) with the sum of ``weights`` (default: the count) of each."""
    unique, inverse = np.unique(keys, return_inverse=True)
    sums = np.bincount(inverse, weights=weights, minlength=len(unique)) if weights is not None \
        else np.bincount(inverse, minlength=len(unique))
    return unique, sums.astype(np.float64)


def _discount(counts: np.ndarray) -> float:
    n1, n2 = float((counts == 1).sum()), float((counts == 2).sum())
    return n1 / (n1 + 2 * n2) if n1 + n2 > 0 else 0.5


@dataclass(frozen=True)
class KneserNeyTrigram:
    """The fitted counts (see `fit`); `token_nll` scores a sequence."""

    vocab_size: int
    tri_keys: np.ndarray  # trigram types (u V + v) V + w, sorted
    tri_counts: np.ndarray
    ctx2_keys: np.ndarray  # (u, v) contexts: u V + v
    ctx2_total: np.ndarray  # c(u v .)
    ctx2_types: np.ndarray  # N1+(u v .)
    cont2_keys: np.ndarray  # (v, w) suffixes of trigram types: v V + w
    cont2_counts: np.ndarray  # N1+(. v w)
    mid_keys: np.ndarray  # v
    mid_total: np.ndarray  # N1+(. v .): trigram types with middle v
    mid_types: np.ndarray  # N1+(v .) among the suffixes: distinct w after v
    uni_cont: np.ndarray  # [V] N1+(. w): bigram types ending in w
    bigram_types: float  # N1+(. .)
    discounts: tuple[float, float, float]  # D for orders 1, 2, 3

    @classmethod
    def fit(cls, sequences: Iterable[Sequence[int]], vocab_size: int) -> KneserNeyTrigram:
        """From token id sequences (each counted on its own: no n-gram spans two)."""
        v = np.int64(vocab_size)
        tri: list[np.ndarray] = []
        bi: list[np.ndarray] = []
        for seq in sequences:
            ids = np.asarray(seq, dtype=np.int64)
            if ids.size and (ids.min() < 0 or ids.max() >= vocab_size):
                raise ValueError(f"KneserNeyTrigram.fit: token id outside the vocabulary of {vocab_size} "
                                 f"(ids {int(ids.min())}..{int(ids.max())})")
            if len(ids) >= 2:
                bi.append(ids[:-1] * v + ids[1:])
            if len(ids) >= 3:
                tri.append((ids[:-2] * v + ids[1:-1]) * v + ids[2:])
        if not bi:
            raise ValueError("KneserNeyTrigram.fit: no sequence of two tokens or more")
        empty = np.zeros(0, dtype=np.int64)
        tri_keys, tri_counts = _grouped(np.concatenate(tri) if tri else empty)
        ctx2_keys, ctx2_total = _grouped(tri_keys // v, tri_counts)
        _, ctx2_types = _grouped(tri_keys // v)
        cont2_keys, cont2_counts = _grouped(tri_keys % (v * v))
        mid_keys, mid_total = _grouped((tri_keys // v) % v)
        _, mid_types = _grouped(cont2_keys // v)
        bigram_keys = np.unique(np.concatenate(bi))
        uni_cont = np.bincount(bigram_keys % v, minlength=vocab_size).astype(np.float64)
        _, bigram_counts = _grouped(np.concatenate(bi))
        return cls(vocab_size, tri_keys, tri_counts, ctx2_keys, ctx2_total, ctx2_types, cont2_keys, cont2_counts,
                   mid_keys, mid_total, mid_types, uni_cont, float(len(bigram_keys)),
                   (_discount(uni_cont), _discount(cont2_counts if len(cont2_counts) else bigram_counts),
                    _discount(tri_counts)))

    def _unigram(self, w: np.ndarray) -> np.ndarray:
        d = self.discounts[0]
        seen = float((self.uni_cont > 0).sum())
        return (np.maximum(self.uni_cont[w] - d, 0) + d * seen / self.vocab_size) / self.bigram_types

    def _bigram(self, v: np.ndarray, w: np.ndarray) -> np.ndarray:
        d, size = self.discounts[1], np.int64(self.vocab_size)
        total = _lookup(self.mid_keys, self.mid_total, v)
        types = _lookup(self.mid_keys, self.mid_types, v)
        count = _lookup(self.cont2_keys, self.cont2_counts, v * size + w)
        lower = self._unigram(w)
        with np.errstate(divide="ignore", invalid="ignore"):
            p = (np.maximum(count - d, 0) + d * types * lower) / total
        return np.where(total > 0, p, lower)

    def _trigram(self, u: np.ndarray, v: np.ndarray, w: np.ndarray) -> np.ndarray:
        d, size = self.discounts[2], np.int64(self.vocab_size)
        ctx = u * size + v
        total = _lookup(self.ctx2_keys, self.ctx2_total, ctx)
        types = _lookup(self.ctx2_keys, self.ctx2_types, ctx)
        count = _lookup(self.tri_keys, self.tri_counts, ctx * size + w)
        lower = self._bigram(v, w)
        with np.errstate(divide="ignore", invalid="ignore"):
            p = (np.maximum(count - d, 0) + d * types * lower) / total
        return np.where(total > 0, p, lower)

    def token_nll(self, ids: Sequence[int]) -> np.ndarray:
        """The NLL (nats) of each token of ``ids`` given the tokens before it in ``ids`` (the first
        token by the unigram level, the second by the bigram level)."""
        x = np.asarray(ids, dtype=np.int64)
        if x.size and (x.min() < 0 or x.max() >= self.vocab_size):
            raise ValueError(f"KneserNeyTrigram.token_nll: token id outside the vocabulary of {self.vocab_size}")
        p = np.empty(len(x), dtype=np.float64)
        if len(x) >= 1:
            p[:1] = self._unigram(x[:1])
        if len(x) >= 2:
            p[1:2] = self._bigram(x[:1], x[1:2])
        if len(x) >= 3:
            p[2:] = self._trigram(x[:-2], x[1:-1], x[2:])
        return -np.log(p)
