"""Scorer features: layer-l states of the *frozen* LM, cut short after layer l.

The paper derives the scorer's input from a frozen LM so that nugget selection does
not depend on the adapters being trained. We run the base LM with both adapters gated
off, under ``no_grad``, and stop the forward as soon as layer ``l``'s input is known: a
forward pre-hook on decoder layer ``l`` raises `_Stop` carrying the states (layers
above ``l`` would be wasted work, ``l = 3`` of 30 for SmolLM2). ``l = L`` reads the
output of the top layer (before the final norm); ``l = 0`` the token embeddings.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import nn
from transformers import DynamicCache


class _Stop(Exception):  # noqa: N818 - control flow, not an error
    def __init__(self, states: torch.Tensor) -> None:
        super().__init__()
        self.states = states


def _first(value: Any) -> torch.Tensor:
    return value if isinstance(value, torch.Tensor) else value[0]


class FrozenFeatures:
    """Computes frozen layer-l features of a LLaMA-family LM wrapped by peft.

    Args:
        layers: the LM's decoder layers (hooked here).
        embed: ``input_ids [batch, n] -> [batch, n, d]`` token embeddings.
        backbone: runs the decoder stack with every adapter off (keyword arguments of
            the HF backbone's forward), e.g. ``Nugget2DModel.backbone_forward``.
        layer: ``l``.
    """

    def __init__(
        self,
        layers: nn.ModuleList,
        embed: Callable[[torch.Tensor], torch.Tensor],
        backbone: Callable[..., Any],
        layer: int,
    ) -> None:
        self.embed = embed
        self.backbone = backbone
        self.layer = layer
        self.layers = layers
        self._armed = False
        if layer < len(self.layers):
            self.layers[layer].register_forward_pre_hook(self._pre_hook, with_kwargs=True)
        else:
            self.layers[-1].register_forward_hook(self._post_hook)

    def _pre_hook(self, _m: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        if self._armed:
            raise _Stop(args[0] if args else kwargs["hidden_states"])

    def _post_hook(self, _m: Any, _args: Any, output: Any) -> None:
        if self._armed:
            raise _Stop(_first(output))

    @torch.no_grad()
    def __call__(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        position_ids: torch.Tensor | None = None,
        past_key_values: DynamicCache | None = None,
    ) -> torch.Tensor:
        """``input_ids [batch, n]`` -> features ``[batch, n, d]``.

        ``attention_mask`` is whatever the LM's forward accepts (2D padding mask or a 4D
        float mask, e.g. a sliding window); ``past_key_values`` is updated for layers
        ``< l`` only (that is all an incremental scorer needs).
        """
        if self.layer == 0:
            return self.embed(input_ids)
        self._armed = True
        try:
            self.backbone(
                input_ids=input_ids,
                attention_mask=attention_mask,
                position_ids=position_ids,
                past_key_values=past_key_values,
                use_cache=past_key_values is not None,
            )
        except _Stop as stop:
            return stop.states
        finally:
            self._armed = False
        raise RuntimeError(f"the LM never reached layer {self.layer}")
