"""The one builder of Nugget2D attention masks: visibility plus the nugget residual.

Every Nugget2D pass (compressor decoding, the parallel autoregressive pass, incremental
streams, the baselines) hands the unmodified LM a 4D float mask ``[batch, 1, q, kv]``
that both ``eager`` and ``sdpa`` add to the attention logits. It carries

- visibility: ``finfo.min`` where a query may not see a key;
- the residual (paper eq. 4 / eq. 5 of Nugget): ``residual_bias(s_j)`` added to every
  logit whose key is nugget ``j``, at every layer and head, so the scorer gets gradient.

Callers describe their keys by ``key_scores [batch, kv]``: the nugget's score on a
nugget key, 0 on any other key (the bias is linear in the score, so 0 adds nothing).
"""

from __future__ import annotations

import torch

from ..modes import ResidualMode
from ..residual import active_residual_bias, add_bias_to_mask


def nugget_attention_mask(
    visible: torch.Tensor,
    dtype: torch.dtype,
    key_scores: torch.Tensor | None = None,
    mode: ResidualMode = ResidualMode.NONE,
    scale: float = 1.0,
) -> torch.Tensor:
    """The additive float mask of one Nugget2D pass.

    Args:
        visible: ``[batch, q, kv]`` bool, True where query ``i`` may attend key ``j``.
        dtype: the LM's dtype (masked entries become ``finfo(dtype).min``).
        key_scores: ``[batch, kv]`` nugget score per key (0 for non-nugget keys), or None
            when no key is a nugget.
        mode: how the scores enter the logits (`ResidualMode`).
        scale: the factor on the scores (``1/sqrt(d_head)`` for eq. 5, else 1).
    Returns:
        ``[batch, 1, q, kv]`` float mask. When the residual is exactly 0 with no gradient
        to carry (``none``, or ``straight_through`` outside autograd) it is the plain
        visibility mask, so inference takes sdpa's simplest path.
    """
    bias = None if key_scores is None else active_residual_bias(key_scores, ResidualMode(mode), scale)
    if bias is None:
        zeros = torch.zeros(visible[:, None].shape, dtype=dtype, device=visible.device)
        return zeros.masked_fill(~visible[:, None], torch.finfo(dtype).min)
    return add_bias_to_mask(visible[:, None], bias, dtype)
