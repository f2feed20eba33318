"""Right padding of token-id lists into a batch, for training and evaluation alike."""

from __future__ import annotations

from collections.abc import Sequence

import torch


def pad(seqs: Sequence[Sequence[int]], pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Right-pad to ``[batch, max_len]`` ids and a 0/1 attention mask, in host memory (a
    batch is moved to its device by whoever runs the model)."""
    width = max(len(s) for s in seqs)
    ids = torch.full((len(seqs), width), pad_id, dtype=torch.long, device="cpu")
    mask = torch.zeros((len(seqs), width), dtype=torch.long, device="cpu")
    for i, s in enumerate(seqs):
        ids[i, : len(s)] = torch.tensor(s, dtype=torch.long, device="cpu")
        mask[i, : len(s)] = 1
    return ids, mask
