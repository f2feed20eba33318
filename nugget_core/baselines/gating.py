"""The RE gating layer (restorable embeddings, §3.3, fig. 2(d), eqs. 4-5).

For decoder queries ``q_1..q_N`` and the single vector ``e`` (``e_repr``)::

    q~_i = q_i W1                                  (d_model -> d_repr)
    q-_i = (1/i) sum_{j<=i} q~_j                   (eq. 4: causal running mean)
    q^_i = Act(concat(q-_i, e) W2) (.) e           (eq. 5, gated by e)
    out_i = q^_i W3                                (d_repr -> d_model)

The decoder layer then adds ``out_i`` to ``q_i`` and layer-normalises, exactly where the
cross-attention output went (RE fig. 2(c)). Act is the gated ReLU of the RE paper
(Dauphin et al., 2017, with ReLU): ``W2`` produces two halves ``a, b`` and
``Act = relu(a) * b``.

The running mean makes each position depend on all earlier queries, so incremental
decoding with a KV cache would need the running sum carried across steps (and reordered
by beam search); `BottleneckModel.generate` decodes without the cache instead.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn


class GatingLayer(nn.Module):
    """Drop-in for a BART decoder layer's ``encoder_attn`` (same call signature)."""

    def __init__(self, d_model: int, d_repr: int) -> None:
        super().__init__()
        self.w1 = nn.Linear(d_model, d_repr)
        self.w2 = nn.Linear(2 * d_repr, 2 * d_repr)  # two halves: gated ReLU
        self.w3 = nn.Linear(d_repr, d_model)

    def gate(self, queries: torch.Tensor, e_repr: torch.Tensor) -> torch.Tensor:
        """``queries [batch, n, d_model]``, ``e_repr [batch, d_repr]`` -> ``[batch, n, d_model]``.

        Position ``i`` of the output depends only on queries ``1..i`` (causal).
        """
        projected = self.w1(queries)
        steps = torch.arange(1, queries.shape[1] + 1, device=queries.device, dtype=projected.dtype)
        running_mean = projected.cumsum(dim=1) / steps[None, :, None]
        e = e_repr[:, None, :].expand_as(running_mean)
        a, b = self.w2(torch.cat([running_mean, e], dim=-1)).chunk(2, dim=-1)
        return self.w3(torch.relu(a) * b * e)

    def forward(
        self,
        hidden_states: torch.Tensor,
        key_value_states: torch.Tensor | None = None,
        attention_mask: torch.Tensor | None = None,
        past_key_values: Any = None,
        **kwargs: Any,
    ) -> tuple[torch.Tensor, None]:
        """``key_value_states [batch, 1, d_repr]`` carries the single vector; the mask of
        one always-present key is irrelevant, and nothing is cached (see module doc)."""
        if key_value_states is None or key_value_states.shape[1] != 1:
            shape = None if key_value_states is None else tuple(key_value_states.shape)
            raise ValueError(f"the gating layer reads exactly one vector per sequence, got {shape}")
        return self.gate(hidden_states, key_value_states[:, 0]), None
