"""Per-layer key/value states as plain tensors, and conversions to HF cache objects.

HF LLaMA-family caches store keys *after* the rotary embedding, so a gathered subset
of positions keeps its original positions: a `DynamicCache` built from the gathered
tensors is attended exactly as the full one at those positions would be.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from transformers import DynamicCache
from transformers.cache_utils import CacheLayerMixin


@dataclass
class LayerKV:
    """Keys and values of all layers: each ``[batch, kv_heads, length, head_dim]``."""

    keys: list[torch.Tensor]
    values: list[torch.Tensor]

    @property
    def length(self) -> int:
        return 0 if not self.keys else int(self.keys[0].shape[2])

    @classmethod
    def from_cache(cls, cache: DynamicCache) -> LayerKV:
        pairs = [_keys_values(layer, index) for index, layer in enumerate(cache.layers)]
        return cls([k for k, _ in pairs], [v for _, v in pairs])

    def to_cache(self) -> DynamicCache:
        """A fresh `DynamicCache` holding these states (the model appends to it)."""
        return DynamicCache(ddp_cache_data=list(zip(self.keys, self.values, strict=True)))

    def gather(self, indices: torch.Tensor) -> LayerKV:
        """Positions ``indices [batch, k]`` of every layer."""

        def pick(t: torch.Tensor) -> torch.Tensor:
            index = indices[:, None, :, None].expand(-1, t.shape[1], -1, t.shape[3])
            return torch.gather(t, 2, index)

        return LayerKV([pick(k) for k in self.keys], [pick(v) for v in self.values])

    def gather_heads(self, indices: list[torch.Tensor]) -> LayerKV:
        """Per layer and head positions: layer ``i`` keeps ``indices[i] [batch, kv_heads, k]``
        (the training-free presses choose per head)."""
        if len(indices) != len(self.keys):
            raise ValueError(f"gather_heads: {len(indices)} index tensors for {len(self.keys)} layers")

        def pick(t: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
            return torch.gather(t, 2, index[..., None].expand(-1, -1, -1, t.shape[3]))

        return LayerKV([pick(k, i) for k, i in zip(self.keys, indices, strict=True)],
                       [pick(v, i) for v, i in zip(self.values, indices, strict=True)])

    def slice(self, start: int, stop: int | None = None) -> LayerKV:
        return LayerKV(
            [k[:, :, start:stop] for k in self.keys], [v[:, :, start:stop] for v in self.values]
        )

    def select(self, keep: torch.Tensor) -> LayerKV:
        """Positions where the 1-D bool ``keep [length]`` is true (same for the batch)."""
        return LayerKV([k[:, :, keep] for k in self.keys], [v[:, :, keep] for v in self.values])

    def cat(self, other: LayerKV) -> LayerKV:
        if not self.keys:
            return other
        if not other.keys:
            return self
        return LayerKV(
            [torch.cat([a, b], dim=2) for a, b in zip(self.keys, other.keys, strict=True)],
            [torch.cat([a, b], dim=2) for a, b in zip(self.values, other.values, strict=True)],
        )

    def nbytes(self) -> int:
        """Bytes held by the keys and values (what a KV cache of these states costs)."""
        return sum(t.numel() * t.element_size() for t in (*self.keys, *self.values))


def empty_kv(num_layers: int) -> LayerKV:
    """No states yet (concatenation starts from the first real block)."""
    del num_layers  # the layer count is fixed by the first `cat`
    return LayerKV([], [])


def cache_nbytes(cache: DynamicCache) -> int:
    """Bytes of the keys and values held by an HF `DynamicCache`."""
    return LayerKV.from_cache(cache).nbytes()


def _keys_values(layer: object, index: int) -> tuple[torch.Tensor, torch.Tensor]:
    """An attention layer's keys and values (a DynamicCache's layers also type as linear
    attention or placeholder layers, which hold none)."""
    if not isinstance(layer, CacheLayerMixin) or layer.keys is None or layer.values is None:
        raise ValueError(f"cache layer {index} ({type(layer).__name__}) holds no keys and values: "
                         "not an attention layer that has run")
    return layer.keys, layer.values
