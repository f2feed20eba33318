"""Deterministic, resumable batches: the batch of global step ``s`` on rank ``r`` is a
pure function of (seed, s, r, world size), so a run resumed at step ``s`` sees exactly
the batches an uninterrupted run would have seen.

Each epoch is a seeded permutation of the examples; rank ``r`` takes every
``world``-th example of it; the last incomplete batch of an epoch is dropped so every
rank does the same number of steps (DDP/ZeRO collectives must stay in lockstep).

With ``lengths`` (``train.<job>.group_by_length``) a rank's examples of an epoch are cut
into windows of ``GROUP_WINDOW`` batches; within a window they are sorted by length and
cut into batches, and the window's batches are shuffled (seeded). A batch then holds
texts of similar length, so little of it is padding (one-sentence RE texts of the tiny
profile, batches of 16: 47% of a random batch's tokens are real, 97% grouped), while the window keeps the
order of the epoch random at the scale of 50 batches (Hugging Face's ``group_by_length``
uses the same 50).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np


@dataclass(frozen=True)
class Example:
    """One tokenised training example (token ids without padding)."""

    source: list[int]
    target: list[int]
    boundaries: list[int]  # source positions ending a sentence (sentence selector)
    # per source token, the index of the word of the text it belongs to (None: a special
    # token such as BOS / EOS); what the TSDAE deletion noise drops whole
    words: tuple[int | None, ...] = ()


#: Batches per window within which ``group_by_length`` sorts a rank's examples.
GROUP_WINDOW = 50


class BatchSchedule:
    """Which examples make each step's batch on one rank (module docstring)."""

    def __init__(self, n_examples: int, batch_size: int, rank: int, world: int, seed: int,
                 lengths: Sequence[int] | None = None) -> None:
        per_rank = n_examples // world
        self.steps_per_epoch = per_rank // batch_size
        if self.steps_per_epoch == 0:
            raise ValueError(
                f"{n_examples} training examples cannot fill one batch of {batch_size} on each "
                f"of {world} workers; lower train.*.batch_size or num_workers, or add data"
            )
        if lengths is not None and len(lengths) != n_examples:
            raise ValueError(f"group_by_length: {len(lengths)} lengths for {n_examples} examples")
        self.n, self.batch_size, self.rank, self.world, self.seed = (
            n_examples, batch_size, rank, world, seed,
        )
        self.lengths = None if lengths is None else np.asarray(lengths)

    @lru_cache(maxsize=2)  # noqa: B019 - one schedule per fit; the epoch in use and the next
    def _epoch(self, epoch: int) -> np.ndarray:
        """``[steps_per_epoch, batch_size]``: this rank's batches of ``epoch``."""
        order = np.random.default_rng([self.seed, epoch]).permutation(self.n)
        used = self.steps_per_epoch * self.batch_size
        mine = order[self.rank :: self.world][:used]
        if self.lengths is None:
            return mine.reshape(self.steps_per_epoch, self.batch_size)
        rng = np.random.default_rng([self.seed, epoch, self.rank, 1])
        batches = []
        window = GROUP_WINDOW * self.batch_size
        for start in range(0, used, window):
            chunk = mine[start : start + window]
            # stable sort: ties keep the epoch's random order
            chunk = chunk[np.argsort(-self.lengths[chunk], kind="stable")]
            grouped = chunk.reshape(-1, self.batch_size)
            batches.append(grouped[rng.permutation(len(grouped))])
        return np.concatenate(batches)

    def indices(self, step: int) -> list[int]:
        """Example indices of global step ``step`` (0-based) on this rank."""
        epoch, within = divmod(step, self.steps_per_epoch)
        return self._epoch(epoch)[within].tolist()


def delete_words(ids: list[int], words: tuple[int | None, ...], p: float, rng: np.random.Generator) -> list[int]:
    """Deletion noise of TSDAE (Wang et al. 2021), as the Nugget paper's baseline uses it:
    drop each *word* of the text (all of its subword tokens) with probability ``p``,
    always keeping at least one word; special tokens (word None) are never dropped."""
    if p <= 0.0:
        return list(ids)
    if len(words) != len(ids):
        raise ValueError(f"deletion noise needs a word index per token: {len(words)} for {len(ids)} tokens")
    distinct = sorted({w for w in words if w is not None})
    if not distinct:
        return list(ids)
    drop = rng.random(len(distinct)) < p
    if drop.all():
        drop[rng.integers(len(distinct))] = False
    dropped = {w for w, d in zip(distinct, drop, strict=True) if d}
    return [t for t, w in zip(ids, words, strict=True) if w is None or w not in dropped]
