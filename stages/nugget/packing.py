"""Pack aligned sentence pairs into documents under a subword limit, never splitting one.

Used by build_mt_docs (every sentence kept) and build_pi (each sentence kept with
probability p independently per side, Nugget appendix A.1). Units are walked in order,
both sides in parallel; a document is closed before the unit that would take either
side over ``limit``. A unit alone over the limit becomes its own document, marked
``truncated`` so the caller cuts its text and counts it.

Counts are per unit (``len(tokenize(joiner + unit))``), so a document's count is the sum
of its units' counts. Subword merges across a joiner can make the real count of the
joined text differ slightly; :func:`enforce_limit` re-counts the joined texts exactly and
re-packs the (rare) documents that overflow, so the limit holds for the real text.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np


@dataclass
class PackedDoc:
    """Unit indices kept on each side; ``truncated`` when one unit exceeded the limit."""

    left: list[int] = field(default_factory=list)
    right: list[int] = field(default_factory=list)
    truncated: bool = False

    @property
    def units(self) -> list[int]:
        return sorted(set(self.left) | set(self.right))


@dataclass
class PackResult:
    docs: list[PackedDoc]
    truncated: int = 0
    empty_skipped: int = 0  # documents left with an empty side by deletion
    deleted_left: int = 0
    deleted_right: int = 0
    units: int = 0


def pack_parallel(
    left_counts: Sequence[int],
    right_counts: Sequence[int],
    limit: int,
    keep_prob: float = 1.0,
    rng: np.random.Generator | None = None,
) -> PackResult:
    """Documents over units ``0..n-1`` of one stream (see the module docstring)."""
    if len(left_counts) != len(right_counts):
        raise ValueError(f"sides differ in length: {len(left_counts)} vs {len(right_counts)}")
    if keep_prob < 1.0 and rng is None:
        raise ValueError("keep_prob < 1 needs an rng")
    out = PackResult(docs=[], units=len(left_counts))
    doc, n_left, n_right = PackedDoc(), 0, 0

    def close() -> None:
        nonlocal doc, n_left, n_right
        if doc.left and doc.right:
            out.docs.append(doc)
        elif doc.left or doc.right:
            out.empty_skipped += 1
        doc, n_left, n_right = PackedDoc(), 0, 0

    for i, (cl, cr) in enumerate(zip(left_counts, right_counts, strict=False)):
        # draw both sides every time: the sample of one side never depends on the other
        # (no rng only with keep_prob 1, checked above)
        keep_l, keep_r = (True, True) if keep_prob >= 1.0 or rng is None else tuple(rng.random(2) < keep_prob)
        out.deleted_left += not keep_l
        out.deleted_right += not keep_r
        add_l, add_r = cl if keep_l else 0, cr if keep_r else 0
        if not (keep_l or keep_r):
            continue
        if add_l > limit or add_r > limit:
            close()
            doc = PackedDoc([i] if keep_l else [], [i] if keep_r else [], truncated=True)
            out.truncated += 1
            close()
            continue
        if n_left + add_l > limit or n_right + add_r > limit:
            close()
        if keep_l:
            doc.left.append(i)
        if keep_r:
            doc.right.append(i)
        n_left, n_right = n_left + add_l, n_right + add_r
    close()
    return out


def _cut_if_over(doc: PackedDoc, count_left: Callable[[list[int]], int], count_right: Callable[[list[int]], int],
                 limit: int) -> PackedDoc:
    """``doc`` marked truncated (cut to the limit when written) if it still exceeds ``limit``: a
    re-packed document of one unit that the approximate per-unit count put within the limit but
    whose exact count does not (an example is in docs/profiles.md)."""
    if len(doc.units) == 1 and (count_left(doc.left) > limit or count_right(doc.right) > limit):
        return PackedDoc(doc.left, doc.right, truncated=True)
    return doc


def enforce_limit(
    docs: list[PackedDoc],
    exact_left: Sequence[int],
    exact_right: Sequence[int],
    count_left: Callable[[list[int]], int],
    count_right: Callable[[list[int]], int],
    limit: int,
) -> tuple[list[PackedDoc], int]:
    """Re-pack documents whose exact joined count exceeds ``limit``; (docs, n re-packed).

    ``exact_*[d]`` is the real count of document d's joined text; ``count_*(units)``
    counts a candidate unit list exactly (only called for the overflowing documents).
    """
    fixed: list[PackedDoc] = []
    repacked = 0
    for doc, el, er in zip(docs, exact_left, exact_right, strict=False):
        if doc.truncated or (el <= limit and er <= limit):
            fixed.append(doc)
            continue
        repacked += 1
        cur = PackedDoc()
        for i in doc.units:
            trial = PackedDoc(
                cur.left + ([i] if i in doc.left else []),
                cur.right + ([i] if i in doc.right else []),
            )
            if (cur.left or cur.right) and (
                count_left(trial.left) > limit or count_right(trial.right) > limit
            ):
                fixed.append(_cut_if_over(cur, count_left, count_right, limit))
                trial = PackedDoc([i] if i in doc.left else [], [i] if i in doc.right else [])
            cur = trial
        fixed.append(_cut_if_over(cur, count_left, count_right, limit))
    # a re-pack can leave a side empty (its units were all deleted on that side)
    return [d for d in fixed if d.left and d.right], repacked
