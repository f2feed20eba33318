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


def delete_tokens(ids: list[int], p: float, rng: np.random.Generator) -> list[int]:
    """Token-deletion noise (TSDAE-style): drop each token with probability ``p``,
    always keeping at least one."""
    if p <= 0.0:
        return list(ids)
    keep = rng.random(len(ids)) >= p
    if not keep.any():
        keep[rng.integers(len(ids))] = True
    return [t for t, k in zip(ids, keep, strict=True) if k]
