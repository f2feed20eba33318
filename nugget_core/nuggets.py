"""The `Nuggets` result and the helpers that turn a token selection into it.

A batch may hold sequences with different numbers of nuggets ``k_b``; the result is
right-padded to ``k_max = max_b k_b`` with ``mask`` telling the real nuggets apart.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass
class Nuggets:
    """Selected encoder states of a batch, in text order.

    Attributes:
        encoding: ``[batch, k_max, d]`` nugget vectors (after the value projection);
            zero at padding slots.
        mask: ``[batch, k_max]`` long, 1 for a real nugget, 0 for padding.
        scores: ``[batch, k_max]`` scorer logits of the nuggets (with gradient; 0 at
            padding slots, and 0 everywhere for rule-based selectors).
        indices: ``[batch, k_max]`` positions of the nuggets in the input (0 at padding).
    """

    encoding: torch.Tensor
    mask: torch.Tensor
    scores: torch.Tensor
    indices: torch.Tensor

    @property
    def counts(self) -> torch.Tensor:
        """``[batch]`` number of nuggets per sequence."""
        return self.mask.sum(dim=1)


def nugget_counts(attention_mask: torch.Tensor, ratio: float) -> torch.Tensor:
    """``k = ceil(r * n)`` per sequence, clamped to ``[1, n]``.

    Args:
        attention_mask: ``[batch, n_tokens]``, nonzero for real tokens.
    Returns:
        ``[batch]`` long.
    """
    lengths = attention_mask.ne(0).sum(dim=1).to(torch.float64)
    # The epsilon keeps float noise from adding a nugget: 0.1 * 30 == 3.0000000000000004.
    k = torch.ceil(lengths * ratio - 1e-9).long()
    return torch.minimum(k.clamp(min=1), lengths.long().clamp(min=1))


def selection_to_indices(selected: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Positions of the selected tokens in text order, right-padded.

    Args:
        selected: ``[batch, n_tokens]`` bool.
    Returns:
        ``indices [batch, k_max]`` long (0 at padding) and ``mask [batch, k_max]`` long.
    """
    n = selected.shape[1]
    positions = torch.arange(n, device=selected.device).expand_as(selected)
    # Selected positions sort first, each group keeping text order.
    order = torch.where(selected, positions, positions + n).argsort(dim=1)
    k_max = max(int(selected.sum(dim=1).max().item()), 1)
    mask = torch.arange(k_max, device=selected.device) < selected.sum(dim=1, keepdim=True)
    indices = torch.where(mask, order[:, :k_max], 0)
    return indices, mask.long()


def gather_tokens(values: torch.Tensor, indices: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """``values[b, indices[b, j]]`` with zeros at padding slots.

    Args:
        values: ``[batch, n_tokens]`` or ``[batch, n_tokens, d]``.
        indices, mask: ``[batch, k_max]``.
    Returns:
        ``[batch, k_max]`` or ``[batch, k_max, d]``.
    """
    # where, not a product: a padding score is -inf and -inf * 0 is nan.
    keep = mask.bool()
    if values.dim() == 2:
        return torch.where(keep, torch.gather(values, 1, indices), 0.0)
    index = indices.unsqueeze(-1).expand(-1, -1, values.shape[-1])
    return torch.where(keep.unsqueeze(-1), torch.gather(values, 1, index), 0.0)
