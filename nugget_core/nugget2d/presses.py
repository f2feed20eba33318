"""Training-free KV-cache presses at Nugget2D's budget: StreamingLLM, SnapKV, key-norm.

What practitioners use instead of a learned compressor (NVIDIA's ``kvpress`` packages
them but pins ``transformers<5.3``; the three selections are implemented here over
`LayerKV`). A press keeps, *per layer and KV head*, as many positions of a document as
Nugget2D keeps per layer (``k = ceil(r n)`` of ``n`` tokens, `nugget_counts`), chosen
without training:

- ``streaming_llm`` (Xiao et al., 2024): the first ``sink_tokens`` positions (attention
  sinks) and the most recent ones; at most ``k - 1`` sinks, so the last token stays;
- ``snapkv`` (Li et al., 2024): the positions that the document's last ``window`` tokens
  attend to most (attention probabilities summed over the window's queries, averaged
  over the query heads that share the KV head, smoothed over the positions before the
  window by an average pool of ``kernel`` positions, zero padding counted, as the
  authors' ``update_kv``), the window itself first (its most recent positions when
  ``k`` is smaller than the window);
- ``key_norm`` (Devoto et al., 2024): the keys of smallest L2 norm.

A press reads the plain base LM's KV of the document (no adapter) and, like Nugget2D's
compressor, never sees the question: SnapKV's window is the end of the document, not of
the prompt (its query-aware use would read the question before compressing, which no
compressor in these tables does). Keys are cached after the rotary embedding, so the
kept positions keep their original positions and the decoder continues after the
document, as for Nugget2D. `PressStream` (`nugget_core.nugget2d.press_stream`) applies
the query-free presses to a token-by-token LM.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch
import torch.nn.functional as F
from transformers import AttentionInterface
from transformers.integrations.sdpa_attention import sdpa_attention_forward
from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

from ..nuggets import nugget_counts
from ..typed_access import child
from .attention import attention_implementation
from .context import CompressedContext
from .model import Nugget2DModel

PRESSES = ("streaming_llm", "snapkv", "key_norm")
#: Presses that need no query, so they also run while an LM reads token by token.
STREAMING_PRESSES = ("streaming_llm", "key_norm")
PROBE_ATTENTION = "nugget2d_snapkv_probe"
# Added to a score to rank a position above every attention-based score (which sum to at
# most the window length) while keeping the order among the boosted positions.
_FIRST = 1e6
_SINK = 2.0**52  # above any position (float64 ranks)


@dataclass(frozen=True)
class PressConfig:
    """Settings of the presses (defaults: the methods' own, as kvpress sets them)."""

    sink_tokens: int = 4  # StreamingLLM's attention sinks
    window: int = 64  # SnapKV's observation window (the document's last tokens)
    kernel: int = 5  # SnapKV's pooling kernel (odd)

    def __post_init__(self) -> None:
        if self.sink_tokens < 0:
            raise ValueError(f"PressConfig.sink_tokens must be >= 0, got {self.sink_tokens}")
        if self.window < 1:
            raise ValueError(f"PressConfig.window must be >= 1, got {self.window}")
        if self.kernel < 1 or self.kernel % 2 == 0:
            raise ValueError(f"PressConfig.kernel must be odd and >= 1, got {self.kernel}")


def check_press(press: str, allowed: tuple[str, ...] = PRESSES) -> None:
    if press not in allowed:
        raise ValueError(f"unknown KV press {press!r}; use one of {allowed}")


# --- scores: [batch, kv_heads, n] float32, higher = kept first, -inf at padding ----------


def _masked(scores: torch.Tensor, real: torch.Tensor) -> torch.Tensor:
    return scores.masked_fill(~real.bool()[:, None, :], float("-inf"))


def streaming_llm_scores(
    positions: torch.Tensor, real: torch.Tensor, counts: torch.Tensor, kv_heads: int, sink_tokens: int
) -> torch.Tensor:
    """Sinks first, then recency. ``positions`` / ``real`` ``[batch, n]`` (the positions'
    text positions and real-token mask), ``counts [batch]`` positions to keep."""
    sinks = torch.minimum(torch.full_like(counts, sink_tokens), (counts - 1).clamp(min=0))
    return _masked(_sinks_then_recent(positions, sinks[:, None])[:, None, :].expand(-1, kv_heads, -1), real)


def _sinks_then_recent(positions: torch.Tensor, sinks: torch.Tensor | int) -> torch.Tensor:
    """StreamingLLM's rank (float64, exact for any position): the sinks first, earliest
    first (a budget below the sink count keeps the very first tokens), then recency."""
    positions = positions.double()
    return torch.where(positions < sinks, _SINK - positions, positions)


def key_norm_scores(keys: torch.Tensor, real: torch.Tensor) -> torch.Tensor:
    """Smallest key L2 norm first; ``keys [batch, kv_heads, n, head_dim]``."""
    return _masked(-keys.float().norm(dim=-1), real)


def snapkv_scores(
    window_attention: torch.Tensor, real: torch.Tensor, lengths: torch.Tensor, window: int, kernel: int
) -> torch.Tensor:
    """``window_attention [batch, kv_heads, n]`` (attention the window's queries give each
    key, `WindowProbe`) smoothed as the SnapKV authors do (``SnapKVCluster.update_kv``):
    only the positions *before* the window are pooled, an average over ``kernel``
    positions with zero padding counted (``avg_pool1d``'s ``count_include_pad=True``), so
    the window's own attention never leaks into the positions next to it and every score
    is divided by ``kernel``. The window's positions come first, most recent first."""
    b, h, n = window_attention.shape
    positions = torch.arange(n, device=real.device)[None, :]
    in_window = positions >= (lengths[:, None] - window)  # the rest of a row: its prefix, then padding
    # zeros from the window on: pooling the prefix alone with zero padding, per row
    prefix = window_attention.masked_fill(in_window[:, None, :], 0.0)
    pooled = F.avg_pool1d(prefix.reshape(b * h, 1, n), kernel, stride=1, padding=kernel // 2,
                          count_include_pad=True).reshape(b, h, n)
    boosted = torch.where(in_window[:, None, :], _FIRST + positions[:, None, :].float(), pooled)
    return _masked(boosted, real)


def keep_indices(scores: torch.Tensor, counts: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The ``counts[b]`` best positions of each row and head, in text order.

    Args:
        scores: ``[batch, heads, n]`` (-inf at padding; ``counts[b]`` <= real tokens).
        counts: ``[batch]``.
    Returns:
        ``indices [batch, heads, k_max]`` (0 at padding slots) and ``mask [batch, k_max]``.
    """
    n = scores.shape[-1]
    k_max = int(counts.max())
    top = scores.topk(k_max, dim=-1).indices
    slots = torch.arange(k_max, device=scores.device)
    valid = slots[None, :] < counts[:, None]
    # Kept positions in ascending order; padding slots pushed past n, then zeroed.
    ordered = torch.where(valid[:, None, :], top, top + n).sort(dim=-1).values
    return torch.where(ordered < n, ordered, 0), valid.long()


# --- SnapKV's window attention, recorded during the document pass ------------------------


@dataclass
class WindowProbe:
    """Collects, per layer, the attention of each row's last ``window`` real tokens to
    every key: ``scores[layer]`` ``[batch, kv_heads, n]`` (float32)."""

    window: int
    lengths: torch.Tensor
    scores: dict[int, torch.Tensor] = field(default_factory=dict)

    def record(self, layer: int, query: torch.Tensor, key: torch.Tensor, scaling: float) -> None:
        b, heads, n, d = query.shape
        kv_heads = key.shape[1]
        w = min(self.window, n)
        # Window queries of row b: positions lengths[b] - w .. lengths[b] - 1 (those < 0 dropped).
        qpos = self.lengths[:, None] - w + torch.arange(w, device=query.device)[None, :]
        valid = qpos >= 0
        q = torch.gather(query, 2, qpos.clamp(min=0)[:, None, :, None].expand(-1, heads, -1, d))
        logits = torch.einsum("bhwd,bhnd->bhwn", q.float(), key.float().repeat_interleave(heads // kv_heads, 1))
        keys = torch.arange(n, device=query.device)
        visible = keys[None, None, :] <= qpos[:, :, None]  # causal; padding lies after every query
        probs = (logits * scaling).masked_fill(~visible[:, None], float("-inf")).softmax(dim=-1)
        probs = probs * valid[:, None, :, None]
        self.scores[layer] = probs.sum(dim=2).reshape(b, kv_heads, heads // kv_heads, n).mean(dim=2)


def probe_attention(
    module: torch.nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    dropout: float = 0.0,
    scaling: float | None = None,
    snapkv_probe: WindowProbe | None = None,
    **kwargs: Any,
) -> tuple[torch.Tensor, None]:
    """SDPA attention (the pass's output is unchanged) that also hands the layer's
    queries and keys to ``snapkv_probe`` (registered as `PROBE_ATTENTION`)."""
    if snapkv_probe is None:
        raise ValueError(f"attention {PROBE_ATTENTION!r} needs snapkv_probe (use press_context)")
    scale = scaling if scaling is not None else query.shape[-1] ** -0.5
    snapkv_probe.record(child(module, "layer_idx", int), query, key, scale)
    return sdpa_attention_forward(module, query, key, value, attention_mask, dropout=dropout, scaling=scaling,
                                  **kwargs)


AttentionInterface.register(PROBE_ATTENTION, probe_attention)
AttentionMaskInterface.register(PROBE_ATTENTION, sdpa_mask)


# --- the press of a batch of documents ------------------------------------------------------


def press_context(
    model: Nugget2DModel,
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor,
    ratio: float,
    press: str,
    config: PressConfig | None = None,
) -> CompressedContext:
    """Encode right-padded documents ``[batch, n]`` with the plain base LM and keep
    ``ceil(r n)`` positions per layer and KV head by ``press`` (module docstring).

    The result decodes like Nugget2D's context (scores 0: no residual); its
    ``positions`` are the first layer's first head's (other heads keep others)."""
    check_press(press)
    config = config or PressConfig()
    lengths = attention_mask.ne(0).sum(dim=1)
    counts = nugget_counts(attention_mask, ratio)
    if press == "snapkv":
        probe = WindowProbe(config.window, lengths)
        with attention_implementation(model.lm.config, PROBE_ATTENTION):
            kv = model.encode_kv(input_ids, attention_mask, None, snapkv_probe=probe)
    else:
        kv = model.encode_kv(input_ids, attention_mask, None)
    n = input_ids.shape[1]
    positions = torch.arange(n, device=input_ids.device).expand(input_ids.shape[0], -1)
    indices = []
    for layer, keys in enumerate(kv.keys):
        if press == "streaming_llm":
            scores = streaming_llm_scores(positions, attention_mask, counts, keys.shape[1], config.sink_tokens)
        elif press == "key_norm":
            scores = key_norm_scores(keys, attention_mask)
        else:
            scores = snapkv_scores(probe.scores[layer], attention_mask, lengths, config.window, config.kernel)
        index, mask = keep_indices(scores, counts)
        indices.append(index)
    pressed = kv.gather_heads(indices)
    return CompressedContext(
        kv=pressed,
        mask=mask,
        scores=torch.zeros(mask.shape, dtype=model.dtype, device=input_ids.device),
        positions=indices[0][:, 0] * mask,
        lengths=lengths,
    )


def press_layer(
    press: str, keys: torch.Tensor, positions: torch.Tensor, budget: int, sink_tokens: int
) -> torch.Tensor:
    """Positions (indices into dim 2) of one layer's ``keys [1, kv_heads, m, head_dim]`` that
    a query-free press keeps, ``[1, kv_heads, budget]`` in text order; ``positions
    [1, kv_heads, m]`` are the tokens' text positions (what StreamingLLM ranks by)."""
    check_press(press, STREAMING_PRESSES)
    real = torch.ones(1, keys.shape[2], dtype=torch.bool, device=keys.device)
    if press == "key_norm":
        scores = key_norm_scores(keys, real)
    else:  # positions are per head here; sinks are the stream's first tokens
        scores = _sinks_then_recent(positions, sink_tokens)
    counts = torch.tensor([budget], device=keys.device)
    return keep_indices(scores, counts)[0]
