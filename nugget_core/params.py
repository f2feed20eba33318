"""Parameter freezing and counting."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from torch import nn


@dataclass(frozen=True)
class ParameterCount:
    trainable: int
    total: int

    def __str__(self) -> str:
        share = 100.0 * self.trainable / max(self.total, 1)
        return f"trainable params: {self.trainable:,} || all params: {self.total:,} || {share:.2f}%"


def count_parameters(module: nn.Module) -> ParameterCount:
    """Trainable and total parameter counts; tied/shared parameters count once."""
    params = list(module.parameters())  # nn.Module.parameters() already de-duplicates
    return ParameterCount(
        trainable=sum(p.numel() for p in params if p.requires_grad),
        total=sum(p.numel() for p in params),
    )


def freeze(modules: Iterable[nn.Module]) -> list[nn.Parameter]:
    """Stop gradients to ``modules``; returns the parameters that were trainable."""
    frozen = [p for m in modules for p in m.parameters() if p.requires_grad]
    for p in frozen:
        p.requires_grad_(False)
    return frozen
