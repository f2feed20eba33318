"""Corpus BLEU from summed sufficient statistics, vectorised over resamples.

The same arithmetic as sacrebleu's ``BLEU.compute_bleu`` with its default exp smoothing (NIST
mteval's: the k-th n-gram order with no match counts as precision 1 / (2^k total)), on arrays:
a bootstrap draws thousands of resamples at once (`stages.common.resampling`), where calling
sacrebleu once per resample would dominate the report's time. Checked against sacrebleu on random
statistics (tests/evaluation/test_resampling.py).
"""

from __future__ import annotations

import numpy as np


def bleu_from_sums(sums: np.ndarray) -> np.ndarray:
    """BLEU (0-100) of ``sums [..., 2 + 2 * order]``: hypothesis length, reference length, the
    matched n-grams of each order, then the hypothesis n-grams of each order
    (`stages.evaluation.metrics.bleu_statistics`, summed over documents)."""
    sums = np.asarray(sums, dtype=np.float64)
    order = (sums.shape[-1] - 2) // 2
    sys_len, ref_len = sums[..., 0], sums[..., 1]
    correct, total = sums[..., 2 : 2 + order], sums[..., 2 + order :]
    with np.errstate(divide="ignore", invalid="ignore"):
        brevity = np.where(sys_len < ref_len, np.where(sys_len > 0, np.exp(1 - ref_len / np.maximum(sys_len, 1e-300)),
                                                       0.0), 1.0)
        # the k-th order without a match (k = 1, 2, ...) has precision 100 / (2^k total)
        unmatched = np.cumsum(correct == 0, axis=-1)
        precision = np.where(correct > 0, 100.0 * correct / total, 100.0 / (2.0 ** unmatched * total))
        log_mean = np.log(precision).mean(axis=-1)
        score = brevity * np.exp(log_mean)
    # no match at all, or an order with no hypothesis n-gram (sacrebleu: precision 0, log -> -inf): BLEU 0
    dead = (correct.sum(axis=-1) == 0) | (total == 0).any(axis=-1)
    return np.where(dead, 0.0, score)
