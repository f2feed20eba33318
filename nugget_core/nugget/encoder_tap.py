"""`EncoderTap`: scoring (and nugget feedback) inside an unmodified HF encoder.

The scorer reads the layer-l states ``X^(l)`` (l = 0: the embedding output). A forward
pre-hook on encoder layer ``l`` sees exactly those states as its input, so it can score
them, select the nuggets and, with feedback, return ``X^(l) + E`` as the input of layer
``l + 1`` (paper eq. 8). For ``l = L`` (the top layer) a forward hook on the last layer
does the same on its output.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch
from torch import nn

from ..scorer import EncoderPass, NuggetScorer


def _replace_first(value: Any, new_first: torch.Tensor) -> Any:
    """Swap the hidden states in a layer's input args / output (tensor or tuple)."""
    if isinstance(value, torch.Tensor):
        return new_first
    return (new_first, *value[1:])


class EncoderTap:
    """Runs the scorer at encoder layer ``layer`` during a `capture` block."""

    def __init__(self, layers: nn.ModuleList, layer: int, scorer: NuggetScorer) -> None:
        self.scorer = scorer
        self._pass: EncoderPass | None = None
        if layer < len(layers):
            self._handle = layers[layer].register_forward_pre_hook(self._pre_hook, with_kwargs=True)
        else:
            self._handle = layers[-1].register_forward_hook(self._post_hook)

    @contextmanager
    def capture(
        self,
        attention_mask: torch.Tensor,
        ratio: float,
        boundary_mask: torch.Tensor | None = None,
    ) -> Iterator[EncoderPass]:
        """Encoder calls within the block are scored; the yielded pass gets the results."""
        p = EncoderPass(attention_mask=attention_mask, ratio=ratio, boundary_mask=boundary_mask)
        previous, self._pass = self._pass, p
        try:
            yield p
        finally:
            self._pass = previous

    def remove(self) -> None:
        self._handle.remove()

    def _process(self, hidden: torch.Tensor) -> torch.Tensor:
        p = self._pass
        if p is None:
            # A silent pass-through would drop the feedback and the scores unnoticed.
            raise RuntimeError(
                "the nuggified encoder ran outside a nugget pass: call NuggetModel.encode / "
                "forward / generate (or the encoder returned by nuggify), or unload() first"
            )
        p.scores = self.scorer.score(hidden, p.attention_mask)
        p.selected = self.scorer.select(p.scores, p, p.ratio)
        return self.scorer.feedback(hidden, p.selected)

    def _pre_hook(
        self, module: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> tuple[tuple[Any, ...], dict[str, Any]]:
        if args:
            return _replace_first(args, self._process(args[0])), kwargs
        kwargs = dict(kwargs)
        kwargs["hidden_states"] = self._process(kwargs["hidden_states"])
        return args, kwargs

    def _post_hook(self, module: nn.Module, args: tuple[Any, ...], output: Any) -> Any:
        hidden = output if isinstance(output, torch.Tensor) else output[0]
        return _replace_first(output, self._process(hidden))
