"""The RE gating layer (restorable embeddings, §3.3, fig. 2(d), eqs. 4-5).

For decoder queries ``q_1..q_N`` and the single vector ``e`` (``e_repr``)::

    q~_i = q_i W1                                  (d_model -> d_repr)
    q-_i = (1/i) sum_{j<=i} q~_j                   (eq. 4: causal running mean)
    q^_i = Act(concat(q-_i, e) W2) (.) e           (eq. 5, gated by e)
    out_i = q^_i W3                                (d_repr -> d_model)

The decoder layer then adds ``out_i`` to ``q_i`` and layer-normalises, exactly where the
cross-attention output went (RE fig. 2(c)): BART's post-LN decoder layer does that itself
around its ``encoder_attn`` (which this layer replaces); for pre-LN T5 see
`nugget_core.restorable.t5`. Act is the gated ReLU of the RE paper
(Dauphin et al., 2017, with ReLU): ``W2`` produces two halves ``a, b`` and
``Act = relu(a) * b``.

The running mean makes each position depend on all earlier queries, so incremental
decoding carries the running sum across steps: with a KV cache, the layer keeps
``sum_j q~_j [batch, 1, 1, d_repr]`` and the count of positions ``[batch, 1, 1, 1]`` as the
keys / values of its own layer of the cross-attention cache (which the gating decoder
does not otherwise use). Beam search reorders that cache like any other, so each beam
keeps its own sum; without that, every decoding step re-runs the whole prefix (O(n^2),
the bulk of a reconstruction stage's time: docs/performance.md).
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn


class GatingLayer(nn.Module):
    """Drop-in for a BART decoder layer's ``encoder_attn`` (same call signature).

    Used by `nugget_core.restorable` (RE's own model) and by the gating baseline of
    `nugget_core.baselines`.
    """

    def __init__(self, d_model: int, d_repr: int, layer_idx: int | None = None) -> None:
        super().__init__()
        self.layer_idx = layer_idx  # where its running sum lives in a cache (None: never cached)
        self.w1 = nn.Linear(d_model, d_repr)
        self.w2 = nn.Linear(2 * d_repr, 2 * d_repr)  # two halves: gated ReLU
        self.w3 = nn.Linear(d_repr, d_model)

    def gate(
        self,
        queries: torch.Tensor,
        e_repr: torch.Tensor,
        past_sum: torch.Tensor | None = None,
        past_count: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """``queries [batch, n, d_model]``, ``e_repr [batch, d_repr]`` -> (output
        ``[batch, n, d_model]``, running sum ``[batch, d_repr]`` and count ``[batch, 1]``
        after the last query).

        Position ``i`` of the output depends only on queries ``1..i`` (causal). With
        ``past_sum`` / ``past_count`` (the state returned for earlier positions), the
        queries continue that sequence: the mean runs over the earlier positions too.
        """
        projected = self.w1(queries)
        steps = torch.arange(1, queries.shape[1] + 1, device=queries.device, dtype=projected.dtype)
        sums = projected.cumsum(dim=1)
        if past_sum is not None and past_count is not None:
            sums = sums + past_sum[:, None, :]
            steps = steps[None, :] + past_count
        else:
            steps = steps[None, :].expand(queries.shape[0], -1)
        running_mean = sums / steps[:, :, None]
        e = e_repr[:, None, :].expand_as(running_mean)
        a, b = self.w2(torch.cat([running_mean, e], dim=-1)).chunk(2, dim=-1)
        return self.w3(torch.relu(a) * b * e), sums[:, -1], steps[:, -1:]

    def forward(
        self,
        hidden_states: torch.Tensor,
        key_value_states: torch.Tensor | None = None,
        attention_mask: torch.Tensor | None = None,
        past_key_values: Any = None,
        cache: Any = None,
        **kwargs: Any,
    ) -> tuple[torch.Tensor, None]:
        """``key_value_states [batch, 1, d_repr]`` carries the single vector; the mask of
        one always-present key is irrelevant. With ``past_key_values`` (an HF
        `EncoderDecoderCache`, or the cross-attention `Cache` itself) the running sum of
        earlier positions is read from and written back to the cache (see module doc).
        ``cache`` is the same cache under the name transformers >= 5.24 passes to attention
        modules (it renamed ``past_key_values``; reading only the old name would decode without
        the running sum: docs/environment-notes.md)."""
        if key_value_states is None or key_value_states.shape[1] != 1:
            shape = None if key_value_states is None else tuple(key_value_states.shape)
            raise ValueError(f"the gating layer reads exactly one vector per sequence, got {shape}")
        given = cache if cache is not None else past_key_values
        cache = getattr(given, "cross_attention_cache", given)
        if cache is None:
            return self.gate(hidden_states, key_value_states[:, 0])[0], None
        if self.layer_idx is None:
            raise ValueError("a cached gating layer needs its layer_idx (the model that installs it sets it)")
        past_sum = past_count = None
        if cache.get_seq_length(self.layer_idx) > 0:
            layer = cache.layers[self.layer_idx]
            past_sum, past_count = layer.keys[:, 0, 0], layer.values[:, 0, 0]
        out, total, count = self.gate(hidden_states, key_value_states[:, 0], past_sum, past_count)
        if past_sum is None:  # first step: creates the layer's entry ([batch, 1, 1, *])
            cache.update(total[:, None, None, :], count[:, None, None, :], self.layer_idx)
        else:
            layer.keys, layer.values = total[:, None, None, :], count[:, None, None, :]
        return out, None
