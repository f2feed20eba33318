"""Switching the attention function of an HF model for a block (Compressive's attention,
the presses' probe, and the recomputation of a checkpointed layer use it)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


@contextmanager
def attention_implementation(config: Any, name: str) -> Iterator[None]:
    """Within the block, the HF model of ``config`` attends with ``name`` (a key of
    ``ALL_ATTENTION_FUNCTIONS``); restored on exit."""
    previous = config._attn_implementation
    config._attn_implementation = name
    try:
        yield
    finally:
        config._attn_implementation = previous
