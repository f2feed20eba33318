"""`CompressedContext` (the nuggets of a document at every layer) and the 4D masks
that let the unmodified LM attend to it.

Every Nugget2D pass is a plain HF forward with three things of our own: a cache object
holding the states to attend to, explicit ``position_ids`` (nuggets keep their original
positions; new tokens continue after the document) and a 4D float mask ``[batch, 1,
q_len, kv_len]`` that both ``eager`` and ``sdpa`` add to the attention logits. The mask
carries visibility (``finfo.min`` = hidden) and the residual: the nugget scores are
added to the columns of the nugget keys, so they reach every layer (paper eq. 4).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ..config import ResidualMode
from ..residual import add_bias_to_mask, residual_bias
from .kv import LayerKV


@dataclass
class CompressedContext:
    """Nuggets of a batch of documents.

    Attributes:
        kv: per-layer keys/values of the nuggets, ``[batch, kv_heads, k_max, head_dim]``.
        mask: ``[batch, k_max]`` long, 1 for a real nugget (rows right-padded).
        scores: ``[batch, k_max]`` scorer logits (with gradient; 0 at padding slots).
        positions: ``[batch, k_max]`` original token positions (0 at padding slots).
        lengths: ``[batch]`` document lengths: new tokens start at these positions.
    """

    kv: LayerKV
    mask: torch.Tensor
    scores: torch.Tensor
    positions: torch.Tensor
    lengths: torch.Tensor

    @property
    def counts(self) -> torch.Tensor:
        """``[batch]`` nuggets per document."""
        return self.mask.sum(dim=1)

    @property
    def num_positions(self) -> int:
        """KV positions held per layer (``k_max``)."""
        return self.kv.length

    def nbytes(self) -> int:
        """Bytes of the nugget keys and values (all layers)."""
        return self.kv.nbytes()


def pack_segments(
    segments: list[tuple[torch.Tensor, torch.Tensor]],
) -> tuple[torch.Tensor, torch.Tensor]:
    """Concatenate right-padded segments per row, real entries first, text order kept.

    Args:
        segments: ``(values [batch, n_i, ...], mask [batch, n_i])`` pairs.
    Returns:
        ``order [batch, sum n_i]`` (index into the concatenation) and its ``mask``.
    """
    mask = torch.cat([m.long() for _, m in segments], dim=1)
    # Stable sort on "is padding" moves real tokens to the front, in their text order.
    order = torch.sort(mask.eq(0).int(), dim=1, stable=True).indices
    return order, torch.gather(mask, 1, order)


def gather_rows(values: torch.Tensor, order: torch.Tensor) -> torch.Tensor:
    """``values [batch, n, ...]`` reordered along dim 1 by ``order [batch, m]``."""
    if values.dim() == 2:
        return torch.gather(values, 1, order)
    index = order[..., None].expand(-1, -1, values.shape[-1])
    return torch.gather(values, 1, index)


def continuation_positions(context: CompressedContext, token_mask: torch.Tensor) -> torch.Tensor:
    """Positions of packed tokens ``[batch, m]`` that follow the compressed document."""
    offsets = (token_mask.long().cumsum(dim=1) - 1).clamp(min=0)
    return context.lengths[:, None] + offsets


def decoder_visibility(context_mask: torch.Tensor, token_mask: torch.Tensor) -> torch.Tensor:
    """``[batch, m, k + m]`` bool: each token sees the real nuggets and the real tokens
    up to itself (causal). Padding queries see the nuggets, so no row is empty."""
    m = token_mask.shape[1]
    causal = torch.ones(m, m, dtype=torch.bool, device=token_mask.device).tril()
    own = causal[None] & token_mask.bool()[:, None, :]
    nuggets = context_mask.bool()[:, None, :].expand(-1, m, -1)
    return torch.cat([nuggets, own], dim=2)


def key_bias(context: CompressedContext, n_other: int, mode: ResidualMode) -> torch.Tensor | None:
    """``[batch, k + n_other]`` residual on the nugget columns (0 on the others), or None
    when it is exactly 0 and no gradient can flow (keeps sdpa's mask simple)."""
    if mode is ResidualMode.NONE:
        return None
    if mode is ResidualMode.STRAIGHT_THROUGH and not (
        torch.is_grad_enabled() and context.scores.requires_grad
    ):
        return None
    bias = residual_bias(context.scores * context.mask, mode)
    return torch.cat([bias, bias.new_zeros(bias.shape[0], n_other)], dim=1)


def float_mask(
    visible: torch.Tensor, bias: torch.Tensor | None, dtype: torch.dtype
) -> torch.Tensor:
    """Visibility ``[batch, q, kv]`` bool + per-key ``bias [batch, kv]`` -> ``[batch, 1, q, kv]``."""
    mask = visible[:, None]
    if bias is None:
        zeros = torch.zeros(mask.shape, dtype=dtype, device=mask.device)
        return zeros.masked_fill(~mask, torch.finfo(dtype).min)
    return add_bias_to_mask(mask, bias, dtype)
