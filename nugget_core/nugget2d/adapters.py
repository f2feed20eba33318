"""Two peft LoRA adapters on one base LM, routed per pass or per token.

Nugget2D uses one base LM with adapter phi (``compressor``) and adapter theta
(``decoder``). peft's own switches (``set_adapter``, ``disable_adapter``) also flip
``requires_grad``, which would silently freeze the adapter of the *previous* pass while
its graph is still waiting for ``backward``. So `AdapterRouter` sets each LoRA layer's
active-adapter list itself (peft's ``_active_adapter``, which its forward reads and
which leaves ``requires_grad`` alone):

- a pass that uses one adapter (or none: the frozen base LM) activates only that one,
  so the other costs nothing: no matmul, no activation kept for backward;
- a pass that mixes them per token (the autoregressive mode, the joint training pass)
  activates both, and a forward hook on every ``lora_B[name]`` multiplies the adapter's
  output by its gate ``[batch, seq, 1]`` (1 = on, 0 = off, so an off token gets neither
  contribution nor gradient from that adapter). On the output, not the input: LoRA is
  linear per token, so both give the same values and gradients for 0 / 1 gates, but a
  gated input is a new ``[batch, seq, d]`` tensor that ``lora_A`` keeps for backward (per
  adapter, module and layer; computed for the LLaMA-2-7B shape, 2 x 1,168 tokens, two
  adapters on q / k / v / o: 256 x 19 MB = 4.9 GB), while
  ``lora_A`` reading the input itself shares the base layer's saved copy and the gate
  multiply keeps only the gate.

For inference, `AdapterRouter.merged` folds one adapter into the base weights for a
block (W + B A swapped in, the original tensors swapped back after: exact, no
merge / unmerge rounding drift), so a decode step is the plain LM's matmuls alone.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Protocol, runtime_checkable

import torch
from peft import LoraConfig, PeftModel, get_peft_model
from peft.tuners.tuners_utils import BaseTuner
from torch import nn
from torch.utils.hooks import RemovableHandle
from transformers import PreTrainedModel

from ..typed_access import child
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
    tuner = peft_model.base_model
    if not isinstance(tuner, BaseTuner):  # peft leaves the attribute undeclared
        raise TypeError(f"the PeftModel's base_model is a {type(tuner).__name__}, not a peft tuner")
    tuner.set_adapter(list(ADAPTERS))


@runtime_checkable
class _LoraLayer(Protocol):
    """What the router uses of a peft LoRA layer (``peft.tuners.lora.Linear`` & co.;
    peft's ``LoraLayer`` mixin declares all but ``get_delta_weight``)."""

    lora_A: nn.ModuleDict
    lora_B: nn.ModuleDict
    _active_adapter: str | list[str]

    def get_base_layer(self) -> nn.Module: ...

    def get_delta_weight(self, adapter: str) -> torch.Tensor: ...


class AdapterRouter:
    """Routes the two adapters of a `PeftModel` (see module docstring). Outside `route`
    no adapter is active: a forward is the base LM."""

    def __init__(self, peft_model: PeftModel) -> None:
        self.gates: dict[str, Gate] = {COMPRESSOR: 0.0, DECODER: 0.0}
        self._layers: list[_LoraLayer] = []
        self._handles: list[RemovableHandle] = []
        for module in peft_model.modules():
            if not isinstance(module, _LoraLayer) or not isinstance(module.lora_A, nn.ModuleDict):
                continue
            names = [name for name in ADAPTERS if name in module.lora_A]
            if names:
                self._layers.append(module)
            for name in names:
                self._handles.append(module.lora_B[name].register_forward_hook(self._make_hook(name)))
        if not self._handles:
            raise ValueError("no LoRA layers found: do lora_target_modules match the model?")
        self._active: tuple[str, ...] = ()
        self._merged: str | None = None
        self._activate(())

    def _activate(self, names: tuple[str, ...]) -> None:
        # peft's BaseTunerLayer.set_adapter would also set requires_grad (module docstring)
        for layer in self._layers:
            layer._active_adapter = list(names)
        self._active = names

    @property
    def active(self) -> tuple[str, ...]:
        """The adapters the LoRA layers compute now."""
        return self._active

    def _make_hook(self, name: str):
        def hook(_module: nn.Module, _args: tuple[Any, ...], output: torch.Tensor) -> torch.Tensor | None:
            gate = self.gates[name]
            if isinstance(gate, torch.Tensor):
                return output * gate.to(output.dtype)
            if gate == 1.0:
                return None  # a whole pass on this adapter: nothing to scale
            return output * gate

        return hook

    @contextmanager
    def route(self, compressor: Gate, decoder: Gate) -> Iterator[None]:
        """Within the block, scale phi's and theta's inputs by these gates (floats, or
        ``[batch, seq, 1]`` tensors matching the forward's tokens). An adapter whose gate
        is the float 0 is not computed at all."""
        if self._merged is not None:
            # the base weights hold that adapter now: any routed pass would add it twice
            raise RuntimeError(f"adapter {self._merged!r} is merged: no routed pass inside merged()")
        previous, previous_active = dict(self.gates), self._active
        self.gates = {COMPRESSOR: compressor, DECODER: decoder}
        self._activate(tuple(n for n, g in self.gates.items() if not (isinstance(g, float) and g == 0.0)))
        try:
            yield
        finally:
            self.gates = previous
            self._activate(previous_active)

    def snapshot(self) -> tuple[dict[str, Gate], tuple[str, ...]]:
        """The routing in force now (gates and active adapters), for `reinstated`."""
        return dict(self.gates), self._active

    @contextmanager
    def reinstated(self, snapshot: tuple[dict[str, Gate], tuple[str, ...]]) -> Iterator[None]:
        """Within the block, route as when ``snapshot`` was taken: activation checkpointing
        recomputes a layer in backward, after the forward's `route` block has exited, and
        must see the adapters and gates that the forward saw."""
        previous = self.snapshot()
        self.gates, active = dict(snapshot[0]), snapshot[1]
        self._activate(active)
        try:
            yield
        finally:
            self.gates = previous[0]
            self._activate(previous[1])

    def use(self, name: str | None) -> Any:
        """Route a whole pass to one adapter (``None``: the frozen base LM)."""
        if name not in (*ADAPTERS, None):
            raise ValueError(f"unknown adapter {name!r}; use one of {ADAPTERS} or None")
        return self.route(float(name == COMPRESSOR), float(name == DECODER))

    @contextmanager
    def merged(self, name: str | None) -> Iterator[None]:
        """Within the block, adapter ``name`` lives in the base weights and no adapter is
        computed: every forward is the plain LM's graph with theta (or phi) folded in.

        Inference only (raises under autograd: the merged weights carry no gradient to
        the adapter). Routed passes (`route`, `use`) raise inside the block: they would
        apply the merged adapter a second time, or phi on top of theta. Costs one extra
        copy of each targeted weight for the block's duration; the original weight
        tensors are restored untouched on exit.
        ``name=None`` only turns every adapter off.
        """
        if name not in (*ADAPTERS, None):
            raise ValueError(f"unknown adapter {name!r}; use one of {ADAPTERS} or None")
        if name is not None and torch.is_grad_enabled():
            raise RuntimeError("AdapterRouter.merged is for inference: call it under torch.no_grad()")
        if self._merged is not None:
            raise RuntimeError(f"adapter {self._merged!r} is already merged")
        swapped: list[tuple[torch.Tensor, torch.Tensor]] = []  # (weight, its original data)
        previous_active = self._active
        try:
            if name is not None:
                for layer in self._layers:
                    if name not in layer.lora_A:
                        continue
                    weight = child(layer.get_base_layer(), "weight", torch.Tensor)
                    original = weight.data
                    delta = layer.get_delta_weight(name).to(original.dtype)
                    swapped.append((weight, original))
                    weight.data = original + delta
            self._activate(())
            self._merged = name
            yield
        finally:
            for weight, original in swapped:
                weight.data = original
            self._merged = None
            self._activate(previous_active)

    def remove(self) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles = []
        self._activate(ADAPTERS)  # back to peft's state after `attach_adapters`


def adapter_parameters(peft_model: PeftModel, name: str) -> list[nn.Parameter]:
    """The LoRA parameters of adapter ``name``."""
    return [p for n, p in peft_model.named_parameters() if f".{name}." in n and "lora_" in n]
