"""FLOPs of the work items a step is made of: matmuls and attention, counted as the ideal
computation, not as what an implementation launches.

A matmul with ``P`` parameters applied to ``T`` tokens costs ``2 P T`` forward; backward
costs ``2 P T`` for the activation gradient when anything below needs a gradient and
another ``2 P T`` for the weight gradient when the weight is trained. So per parameter and
token: 6 for a trained weight (`TRAINABLE`), 4 for a frozen weight that gradients pass
through (`FROZEN`, the base LM under LoRA), 2 for a forward only (`FORWARD`: frozen layers
nothing below needs gradients from, the forward that activation checkpointing recomputes,
and inference). Attention adds ``4 d`` FLOPs per visible (query, key) pair per layer
forward (``q k^T`` and ``p v``) and ``8 d`` backward, ``d`` = heads x head dim; only
visible pairs count (causal: ``T (T + 1) / 2`` per row). Norms, activations, softmax, the
loss and the optimizer are elementwise and not counted.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

#: FLOPs per parameter per token (see the module docstring).
FORWARD, FROZEN, TRAINABLE = 2, 4, 6


@dataclass(frozen=True)
class Matmul:
    """``params`` weights applied to ``tokens`` tokens at ``per_param_token`` FLOPs
    (`FORWARD` / `FROZEN` / `TRAINABLE`)."""

    name: str
    params: int
    tokens: int
    per_param_token: int

    def flops(self) -> float:
        return float(self.per_param_token) * self.params * self.tokens


@dataclass(frozen=True)
class Attention:
    """Scores and weighted values of ``pairs`` visible (query, key) pairs in each of
    ``layers`` layers of width ``width`` (heads x head dim); ``backward``: also their
    gradients."""

    name: str
    width: int
    pairs: int
    layers: int
    backward: bool

    def flops(self) -> float:
        return (12 if self.backward else 4) * float(self.width) * self.pairs * self.layers


def flops(work: Iterable[Matmul | Attention]) -> float:
    """Total FLOPs of a step's work items."""
    return sum(item.flops() for item in work)


def causal_pairs(n: int) -> int:
    """Visible (query, key) pairs of ``n`` tokens under a causal mask."""
    return n * (n + 1) // 2
