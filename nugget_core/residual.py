"""The residual connection from the nugget scores to the decoder's cross-attention.

Paper eq. 5 adds the score ``s_j`` of nugget ``j`` to every cross-attention logit whose key
is nugget ``j`` (all target tokens, heads and decoder layers). We carry ``s`` in the
*additive float mask* that the cross-attention module already passes to its attention
kernel: a forward pre-hook on each decoder cross-attention module (and on nothing else)
rewrites that mask to ``mask + s``. This

- reaches exactly the cross-attention of every decoder layer and no self-attention, by
  construction (the hook sits on those modules, not on a global attention function);
- works for ``eager`` (the float mask is added to the logits) and ``sdpa`` (a float
  ``attn_mask`` is added to the logits and receives gradient);
- keeps padding intact (the bias is added to the existing mask, whose ``-inf``/min
  entries stay masked), and leaves decoder causality alone (self-attention untouched);
- follows beam search and KV caching: the hook runs at every decoding step and expands
  the per-document scores to the ``batch * beams`` rows HF generation uses
  (``repeat_interleave``, the same expansion HF applies to the encoder outputs).

Eq. 5 of both papers scales the sum, ``(q k^T + s) / sqrt(d)``. HF scales ``q k^T`` by
``1/sqrt(d_head)`` before adding the mask, so the bias added to the mask is
``s * scale`` with ``scale = 1/sqrt(d_head)`` (the adaptor's ``attention_scale``; for
Nugget2D the causal adaptor's ``facts(model).attention_scale``; the configs' ``scale_residual``, on by default; off adds ``s`` unscaled, as this code did
before). With ``straight_through`` the forward pass is unchanged either way; the scale
reaches the scorer's gradient.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch
from torch import nn

from .modes import ResidualMode


def residual_bias(scores: torch.Tensor, mode: ResidualMode, scale: float = 1.0) -> torch.Tensor:
    """``[batch, k]`` bias to add to the attention logits of the ``k`` nugget keys:
    ``scores * scale`` as ``mode`` says (``scale``: the model's ``1/sqrt(d_head)`` for
    eq. 5, or 1).

    Linear in ``scores``, so keys given a score of 0 (non-nuggets) get a bias of 0.
    """
    if mode is ResidualMode.DIRECT:
        return scores * scale
    if mode is ResidualMode.STRAIGHT_THROUGH:
        scaled = scores * scale
        return scaled - scaled.detach()  # zero in the forward pass, d/ds = scale backward
    return torch.zeros_like(scores).detach()


def active_residual_bias(
    scores: torch.Tensor, mode: ResidualMode, scale: float = 1.0
) -> torch.Tensor | None:
    """`residual_bias`, or None when that bias is exactly 0 and carries no gradient
    (``none``; ``straight_through`` outside autograd), so callers can leave the attention
    mask (and sdpa's kernel choice) untouched. ``scores [batch, k]`` -> ``[batch, k]``."""
    if mode is ResidualMode.NONE:
        return None
    if mode is ResidualMode.STRAIGHT_THROUGH and not (
        torch.is_grad_enabled() and scores.requires_grad
    ):
        return None
    return residual_bias(scores, mode, scale)


def add_bias_to_mask(
    mask: torch.Tensor | None, bias: torch.Tensor, dtype: torch.dtype
) -> torch.Tensor:
    """Combine an HF attention mask with a per-key bias into one additive float mask.

    Args:
        mask: None, a bool mask (True = attend) or an additive float mask, all
            broadcastable to ``[batch, 1, q_len, k]``.
        bias: ``[batch, k]``.
    Returns:
        float mask ``[batch, 1, q_len or 1, k]``.
    """
    bias = bias.to(dtype)[:, None, None, :]
    if mask is None:
        return bias
    if mask.dtype == torch.bool:
        mask = torch.zeros(mask.shape, dtype=dtype, device=mask.device).masked_fill(
            ~mask, torch.finfo(dtype).min
        )
    return mask.to(dtype) + bias


def expand_to_batch(scores: torch.Tensor, batch: int) -> torch.Tensor:
    """Repeat per-document rows for ``batch = documents * beams`` rows, beams adjacent."""
    if scores.shape[0] == batch:
        return scores
    if batch % scores.shape[0]:
        raise ValueError(
            f"nugget scores have batch {scores.shape[0]}, cross-attention has batch {batch}: "
            "not a whole number of beams"
        )
    return scores.repeat_interleave(batch // scores.shape[0], dim=0)


class CrossAttentionResidual:
    """Hooks on the decoder's cross-attention modules adding the active nugget scores.

    Outside `active(...)` the hooks do nothing, so the decoder behaves as plain HF.
    """

    def __init__(
        self,
        modules: list[nn.Module],
        mode: ResidualMode,
        mask_kwarg: str,
        states_kwarg: str,
        scale: float = 1.0,
    ) -> None:
        self.mode = ResidualMode(mode)
        self.scale = scale  # the factor on s in the (already scaled) logits
        self.mask_kwarg = mask_kwarg
        self.states_kwarg = states_kwarg
        self.n_modules = len(modules)
        self._scores: torch.Tensor | None = None
        self._handles = [m.register_forward_pre_hook(self._hook, with_kwargs=True) for m in modules]

    @contextmanager
    def active(self, scores: torch.Tensor) -> Iterator[None]:
        """Within the block, cross-attention adds ``scores [batch, k]`` (per `mode`)."""
        previous, self._scores = self._scores, scores
        try:
            yield
        finally:
            self._scores = previous

    def remove(self) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles = []

    def _hook(
        self, module: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> tuple[tuple[Any, ...], dict[str, Any]] | None:
        if self._scores is None or active_residual_bias(self._scores, self.mode) is None:
            # The bias is exactly 0 and nothing will backpropagate: leave the HF mask (and
            # so the fast sdpa kernel choice) untouched, e.g. during generation.
            return None
        states = kwargs.get(self.states_kwarg)
        if states is None:
            raise RuntimeError(
                f"{type(module).__name__} was called without `{self.states_kwarg}`; "
                "is this really a cross-attention module?"
            )
        scores = expand_to_batch(self._scores, states.shape[0])
        if scores.shape[1] != states.shape[1]:
            raise ValueError(
                f"nugget scores cover {scores.shape[1]} nuggets but the decoder attends to "
                f"{states.shape[1]} encoder states; pass nuggets.encoding / nuggets.mask"
            )
        bias = residual_bias(scores, self.mode, self.scale)  # active: checked above
        kwargs = dict(kwargs)
        kwargs[self.mask_kwarg] = add_bias_to_mask(kwargs.get(self.mask_kwarg), bias, states.dtype)
        return args, kwargs
