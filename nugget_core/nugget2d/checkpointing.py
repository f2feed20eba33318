"""Activation checkpointing of passes routed through the adapters
(`Nugget2DModel.enable_activation_checkpointing` documents the forms it takes).

HF recomputes a checkpointed layer in backward, after the forward's routing block (the
`AdapterRouter` state: active adapters, per-token gates) and any attention switch
(`attention_implementation`) have exited. Each checkpoint therefore records both at its
forward and reinstates them for its recomputation; without that the recomputation runs
the base LM, and torch refuses it or the gradients are silently wrong
(``tests/nugget_core/test_nugget2d_training.py``).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any, Protocol, runtime_checkable

from torch import nn

from .adapters import AdapterRouter
from .attention import attention_implementation


def enable_routed_checkpointing(lm: Any, router: AdapterRouter) -> None:
    """HF's per-layer, non-reentrant checkpointing on ``lm`` with the routing and the
    attention function of each forward reinstated in its recomputation."""
    config = lm.config

    def contexts() -> tuple[AbstractContextManager[None], AbstractContextManager[None]]:
        routing, attention = router.snapshot(), config._attn_implementation

        @contextmanager
        def recompute() -> Iterator[None]:
            with attention_implementation(config, attention), router.reinstated(routing):
                yield

        return nullcontext(), recompute()

    lm.gradient_checkpointing_enable({"use_reentrant": False, "context_fn": contexts})


@runtime_checkable
class _Checkpointable(Protocol):
    """An HF layer that checkpoints itself while its flag is set (``GradientCheckpointingLayer``
    and older layers that carry the same flag)."""

    gradient_checkpointing: bool


@contextmanager
def without_layer_checkpointing(layers: Iterable[nn.Module]) -> Iterator[None]:
    """Within the block, HF's per-layer checkpointing is off in ``layers`` (a pass through
    a KV cache: HF drops the cache of a checkpointed layer, and a rerun would extend it
    twice); restored on exit."""
    on = [m for m in layers if isinstance(m, _Checkpointable) and m.gradient_checkpointing]
    for layer in on:
        layer.gradient_checkpointing = False
    try:
        yield
    finally:
        for layer in on:
            layer.gradient_checkpointing = True
