"""Deterministic, resumable batches: the batch of global step ``s`` on rank ``r`` is a
pure function of (seed, s, r, world size), so a run resumed at step ``s`` sees exactly
the batches an uninterrupted run would have seen.

Each epoch is a seeded permutation of the examples; rank ``r`` takes every
``world``-th example of it; the last incomplete batch of an epoch is dropped so every
rank does the same number of steps (DDP/ZeRO collectives must stay in lockstep).
"""

from __future__ import annotations

from dataclasses import dataclass

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


class BatchSchedule:
    def __init__(self, n_examples: int, batch_size: int, rank: int, world: int, seed: int) -> None:
        per_rank = n_examples // world
        self.steps_per_epoch = per_rank // batch_size
        if self.steps_per_epoch == 0:
            raise ValueError(
                f"{n_examples} training examples cannot fill one batch of {batch_size} on each "
                f"of {world} workers; lower train.*.batch_size or num_workers, or add data"
            )
        self.n, self.batch_size, self.rank, self.world, self.seed = (
            n_examples, batch_size, rank, world, seed,
        )

    def indices(self, step: int) -> list[int]:
        """Example indices of global step ``step`` (0-based) on this rank."""
        epoch, within = divmod(step, self.steps_per_epoch)
        order = np.random.default_rng([self.seed, epoch]).permutation(self.n)
        mine = order[self.rank :: self.world]
        start = within * self.batch_size
        return mine[start : start + self.batch_size].tolist()


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
