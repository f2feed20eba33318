"""The Compressive baseline (Rae et al., 2020, mean pooling) in one parallel pass: the
training forward of `CompressiveStream`, so that the baseline can be trained "with the
same configuration" as autoregressive Nugget2D (Nugget2D §5.1) and decodes, token by
token, exactly the function it was trained as.

Semantics for the token at position ``p`` of a sequence starting at position 0 (what
`CompressiveStream` computes one token at a time):

- it attends directly to the tokens in ``(p - w, p]``, ``w`` = ``recent_window``;
- tokens at positions ``<= p - w`` have left the window; they are pooled in chunks of
  ``c = round(1 / r)`` consecutive tokens (chunk ``j`` = positions ``[j c, (j + 1) c)``),
  one memory slot per chunk and layer, once all of a chunk's tokens have left: slot
  ``j`` is visible when ``(j + 1) c - 1 <= p - w``;
- at most ``max_slots`` of the most recent slots stay (``max_nuggets``, and
  ``ceil(distant_window / c)`` when a distant window is set).

A slot's key is the mean of its tokens' keys *before* the rotary embedding, rotated at
the chunk's last position (an average of keys rotated to different positions is not a
key at any position); its value is the mean of the values. Each layer pools its own
keys and values, computed in the same pass, so every token's states see the context
they would see in decoding. The pass runs through a registered attention function
(`ATTENTION`), selected for the duration of one forward; it calls transformers' SDPA
with the boolean mask ``[T, T + slots]``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from transformers import AttentionInterface
from transformers.integrations.sdpa_attention import sdpa_attention_forward
from transformers.models.llama.modeling_llama import rotate_half

from .attention import attention_implementation
from .config import DECODER, Nugget2DConfig

ATTENTION = "nugget2d_compressive"


@dataclass(frozen=True)
class CompressiveLayout:
    """Chunk length, recent window and slot cap of a Compressive memory."""

    chunk: int
    window: int
    max_slots: int | None

    @classmethod
    def from_config(cls, config: Nugget2DConfig, ratio: float | None = None) -> CompressiveLayout:
        """The layout of ``config``'s windows at compression ``ratio`` (default ``config.ratio``)."""
        if config.recent_window is None:
            raise ValueError("Compressive baseline: Nugget2DConfig.recent_window must be set (the direct window)")
        chunk = max(round(1.0 / (ratio or config.ratio)), 1)
        max_slots = config.max_nuggets
        if config.distant_window is not None:
            slots = -(-config.distant_window // chunk)
            max_slots = slots if max_slots is None else min(max_slots, slots)
        return cls(chunk, config.recent_window, max_slots)

    def slots(self, n: int) -> int:
        """Slots that some position of an ``n``-token sequence can see."""
        return max(n - self.window, 0) // self.chunk

    def mask(self, n: int, device: torch.device | str) -> torch.Tensor:
        """``[n, n + slots(n)]`` bool: query ``p`` sees token ``q`` / slot ``j``."""
        p = torch.arange(n, device=device)[:, None]
        q = torch.arange(n, device=device)[None, :]
        direct = (q <= p) & (q > p - self.window)
        complete = (p - self.window + 1).clamp(min=0) // self.chunk  # slots pooled before p
        j = torch.arange(self.slots(n), device=device)[None, :]
        memory = j < complete
        if self.max_slots is not None:
            memory &= j >= complete - self.max_slots
        return torch.cat([direct, memory], dim=1)


def pool_chunks(
    keys: torch.Tensor, values: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, chunk: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """Mean-pool consecutive chunks of ``chunk`` positions: ``keys`` / ``values``
    ``[B, H, m * chunk, D]`` (keys rotated at their positions, whose rotary ``cos`` /
    ``sin`` are ``[1, 1, m * chunk, D]``) -> ``[B, H, m, D]`` each, the keys un-rotated,
    averaged and rotated at each chunk's last position."""
    b, h, n, d = keys.shape
    m = n // chunk
    plain = keys * cos - rotate_half(keys) * sin  # undo the rotation at each position
    mean = plain.reshape(b, h, m, chunk, d).mean(dim=3)
    last_cos, last_sin = cos[:, :, chunk - 1 :: chunk], sin[:, :, chunk - 1 :: chunk]
    pooled_keys = mean * last_cos + rotate_half(mean) * last_sin
    return pooled_keys, values.reshape(b, h, m, chunk, d).mean(dim=3)


@dataclass(frozen=True)
class _Memory:
    """What the attention function needs besides the layer's own tensors."""

    layout: CompressiveLayout
    cos: torch.Tensor  # [1, 1, T, D] rotary of positions 0 .. T-1
    sin: torch.Tensor
    mask: torch.Tensor  # [1, 1, T, T + slots] bool


def compressive_attention(
    module: torch.nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    dropout: float = 0.0,
    scaling: float | None = None,
    compressive_memory: _Memory | None = None,
    **kwargs: Any,
) -> tuple[torch.Tensor, None]:
    """Attention over the recent tokens and the layer's pooled memory (registered as
    `ATTENTION`; ``compressive_memory`` comes through the model's forward kwargs)."""
    if compressive_memory is None:
        raise ValueError(f"attention {ATTENTION!r} needs compressive_memory (use compressive_forward)")
    memory = compressive_memory
    slots = memory.mask.shape[-1] - key.shape[2]
    if slots:
        span = slots * memory.layout.chunk
        pooled_keys, pooled_values = pool_chunks(
            key[:, :, :span], value[:, :, :span], memory.cos[:, :, :span], memory.sin[:, :, :span],
            memory.layout.chunk,
        )
        key = torch.cat([key, pooled_keys], dim=2)
        value = torch.cat([value, pooled_values], dim=2)
    return sdpa_attention_forward(module, query, key, value, memory.mask, dropout=dropout, scaling=scaling,
                                  is_causal=False)


AttentionInterface.register(ATTENTION, compressive_attention)


def compressive_forward(
    model: Any, input_ids: torch.Tensor, ratio: float | None = None, adapter: str | None = DECODER
) -> Any:
    """Logits ``[B, T, V]`` (the HF output) of the Compressive baseline on ``input_ids
    [B, T]`` (unpadded sequences starting at position 0) through ``model`` (a
    `Nugget2DModel`; windows from its config, chunks of ``round(1 / ratio)``), with
    ``adapter`` routed for the pass: what `CompressiveStream` computes token by token."""
    layout = CompressiveLayout.from_config(model.config, ratio)
    batch, n = input_ids.shape
    positions = torch.arange(n, device=input_ids.device)
    cos, sin = model.rotary(positions[None])
    memory = _Memory(layout, cos[:, None], sin[:, None], layout.mask(n, input_ids.device)[None, None])
    with attention_implementation(model.lm.config, ATTENTION):
        return model.lm_forward(adapter, input_ids=input_ids, position_ids=positions[None].expand(batch, -1),
                                compressive_memory=memory)
