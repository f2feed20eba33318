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


def freeze(modules: Iterable[nn.Module], keep: Iterable[nn.Parameter] = ()) -> list[nn.Parameter]:
    """Stop gradients to ``modules``, except the parameters in ``keep``; returns the
    parameters that were trainable."""
    kept = {id(p) for p in keep}
    frozen = list({id(p): p for m in modules for p in m.parameters() if p.requires_grad and id(p) not in kept}.values())
    for p in frozen:
        p.requires_grad_(False)
    return frozen


def decoder_side_parameters(model: nn.Module) -> list[nn.Parameter]:
    """The parameters of an HF encoder-decoder's decoder and output embeddings: with tied
    embeddings (BART, mBART-50, T5) the encoder's token embedding is among them."""
    modules = [model.get_decoder(), model.get_output_embeddings()]  # type: ignore[operator]
    return [p for m in modules if m is not None for p in m.parameters()]
