"""Two peft LoRA adapters on one base LM, routed per pass or per token.

Nugget2D uses one base LM with adapter phi (``compressor``) and adapter theta
(``decoder``). peft's own switches (``set_adapter``, ``disable_adapter``) also flip
``requires_grad``, which would silently freeze the adapter of the *previous* pass while
its graph is still waiting for ``backward``. So both adapters stay active in peft, and a
forward pre-hook on every ``lora_A[name]`` multiplies the adapter's input by a gate:
0 removes that adapter's contribution (and its gradient), 1 keeps it. A gate may be a
scalar (a whole pass uses one adapter) or a per-token tensor ``[batch, seq, 1]``, which
lets one forward mix theta tokens and phi nugget tokens (autoregressive mode).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch
from peft import LoraConfig, PeftModel, get_peft_model
from torch import nn
from transformers import PreTrainedModel

from .config import COMPRESSOR, DECODER, Nugget2DConfig

ADAPTERS = (COMPRESSOR, DECODER)
Gate = float | torch.Tensor


def lora_config(config: Nugget2DConfig) -> LoraConfig:
    return LoraConfig(
        r=config.lora_rank,
        lora_alpha=config.lora_alpha,
        lora_dropout=config.lora_dropout,
        target_modules=list(config.lora_target_modules),
        bias="none",
        task_type="CAUSAL_LM",
    )


def attach_adapters(base: PreTrainedModel, config: Nugget2DConfig) -> PeftModel:
    """Wrap ``base`` in a `PeftModel` with fresh ``compressor`` and ``decoder`` adapters
    (LoRA B starts at 0, so both passes start as the base LM)."""
    peft_model = get_peft_model(base, lora_config(config), adapter_name=COMPRESSOR)
    peft_model.add_adapter(DECODER, lora_config(config))
    activate_both(peft_model)
    return peft_model


def activate_both(peft_model: PeftModel) -> None:
    """Keep both adapters active in peft; routing is done by `AdapterRouter` gates."""
    peft_model.base_model.set_adapter(list(ADAPTERS))


class AdapterRouter:
    """Gates the two adapters of a `PeftModel` (see module docstring)."""

    def __init__(self, peft_model: PeftModel) -> None:
        self.gates: dict[str, Gate] = {COMPRESSOR: 0.0, DECODER: 0.0}
        self._handles = []
        for module in peft_model.modules():
            lora_a = getattr(module, "lora_A", None)
            if not isinstance(lora_a, nn.ModuleDict):
                continue
            for name in ADAPTERS:
                if name in lora_a:
                    hook = self._make_hook(name)
                    self._handles.append(lora_a[name].register_forward_pre_hook(hook))
        if not self._handles:
            raise ValueError("no LoRA layers found: do lora_target_modules match the model?")

    def _make_hook(self, name: str):
        def hook(_module: nn.Module, args: tuple[Any, ...]) -> tuple[Any, ...]:
            gate = self.gates[name]
            if isinstance(gate, float):
                return (args[0] * gate, *args[1:])
            return (args[0] * gate.to(args[0].dtype), *args[1:])

        return hook

    @contextmanager
    def route(self, compressor: Gate, decoder: Gate) -> Iterator[None]:
        """Within the block, scale phi's and theta's inputs by these gates
        (floats, or ``[batch, seq, 1]`` tensors matching the forward's tokens)."""
        previous = dict(self.gates)
        self.gates = {COMPRESSOR: compressor, DECODER: decoder}
        try:
            yield
        finally:
            self.gates = previous

    def use(self, name: str | None) -> Any:
        """Route a whole pass to one adapter (``None``: the frozen base LM)."""
        if name not in (*ADAPTERS, None):
            raise ValueError(f"unknown adapter {name!r}; use one of {ADAPTERS} or None")
        return self.route(float(name == COMPRESSOR), float(name == DECODER))

    def remove(self) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles = []


def adapter_parameters(peft_model: PeftModel, name: str) -> list[nn.Parameter]:
    """The LoRA parameters of adapter ``name``."""
    return [p for n, p in peft_model.named_parameters() if f".{name}." in n and "lora_" in n]
