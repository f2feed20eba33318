"""`CompressedContext` (the nuggets of a document at every layer) and the layout of the
tokens that attend to it.

Every Nugget2D pass is a plain HF forward with three things of our own: a cache object
holding the states to attend to, explicit ``position_ids`` (nuggets keep their original
positions; new tokens continue after the document) and a 4D float mask built by
`nugget_core.nugget2d.bias.nugget_attention_mask` from the visibility below and the nugget
scores (`CompressedContext.key_scores`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

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

    def rows(self, index: torch.Tensor) -> CompressedContext:
        """The contexts of rows ``index [m]`` (repeats allowed): one document compressed
        once and read by several continuations."""
        kv = LayerKV([k.index_select(0, index) for k in self.kv.keys], [v.index_select(0, index) for v in self.kv.values])
        return CompressedContext(kv, self.mask.index_select(0, index), self.scores.index_select(0, index),
                                 self.positions.index_select(0, index), self.lengths.index_select(0, index))

    def key_scores(self, n_after: int) -> torch.Tensor:
        """``[batch, k_max + n_after]``: the nugget scores on the nugget keys (0 at padding
        slots) and 0 on the ``n_after`` token keys cached after them (for
        `bias.nugget_attention_mask`)."""
        scores = self.scores * self.mask
        return torch.cat([scores, scores.new_zeros(scores.shape[0], n_after)], dim=1)


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


def pack_answer_inputs(
    embed: Callable[[torch.Tensor], torch.Tensor],
    soft_prompt: torch.Tensor | None,
    prompt_ids: torch.Tensor | None,
    prompt_mask: torch.Tensor | None,
    answer_ids: torch.Tensor,
    answer_mask: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The decoder input after a context: ``[soft prompt] prompt answer`` per row, each part
    right-padded, packed real tokens first (`pack_segments`).

    Returns ``embeds [batch, m, d]``, ``token_mask [batch, m]`` and ``labels [batch, m]``
    (the answer tokens; -100 on the soft prompt, the prompt and padding).
    """
    batch, device = answer_ids.shape[0], answer_ids.device
    segments: list[tuple[torch.Tensor, torch.Tensor]] = []
    labels: list[torch.Tensor] = []
    if soft_prompt is not None:
        soft = soft_prompt.expand(batch, -1, -1)
        ones = torch.ones(batch, soft.shape[1], dtype=torch.long, device=device)
        segments.append((soft, ones))
        labels.append(torch.full_like(ones, -100))
    if prompt_ids is not None and prompt_ids.shape[1] > 0:
        if prompt_mask is None:
            raise ValueError("pass prompt_mask with prompt_ids")
        segments.append((embed(prompt_ids), prompt_mask))
        labels.append(torch.full_like(prompt_ids, -100))
    segments.append((embed(answer_ids), answer_mask))
    labels.append(answer_ids.masked_fill(answer_mask.eq(0), -100))
    order, token_mask = pack_segments(segments)
    embeds = gather_rows(torch.cat([s for s, _ in segments], dim=1), order)
    packed = gather_rows(torch.cat(labels, dim=1), order).masked_fill(token_mask.eq(0), -100)
    return embeds, token_mask, packed


def positions_after(lengths: torch.Tensor, token_mask: torch.Tensor) -> torch.Tensor:
    """Positions of packed tokens ``[batch, m]`` that follow documents of ``lengths [batch]``."""
    offsets = (token_mask.long().cumsum(dim=1) - 1).clamp(min=0)
    return lengths[:, None] + offsets


def continuation_positions(context: CompressedContext, token_mask: torch.Tensor) -> torch.Tensor:
    """Positions of packed tokens ``[batch, m]`` that follow the compressed document."""
    return positions_after(context.lengths, token_mask)


def decoder_visibility(context_mask: torch.Tensor, token_mask: torch.Tensor) -> torch.Tensor:
    """``[batch, m, k + m]`` bool: each token sees the real nuggets and the real tokens
    up to itself (causal). Padding queries see the nuggets, so no row is empty."""
    m = token_mask.shape[1]
    causal = torch.ones(m, m, dtype=torch.bool, device=token_mask.device).tril()
    own = causal[None] & token_mask.bool()[:, None, :]
    nuggets = context_mask.bool()[:, None, :].expand(-1, m, -1)
    return torch.cat([nuggets, own], dim=2)
