"""Tiny random-init models built in seconds on CPU with no hub access.

`TinyBartSpec` / `build_tiny_bart` (seq2seq; also ``profile=tiny`` training) and
`TinyCausalSpec` / `build_tiny_causal_lm` (LLaMA / Mistral / Qwen2). Lazy (PEP 562).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

_EXPORTS = {
    "TinyBartSpec": ".tiny_bart",
    "build_tiny_bart": ".tiny_bart",
    "TinyCausalSpec": ".tiny_causal",
    "build_tiny_causal_lm": ".tiny_causal",
}
__all__ = [
    "TinyBartSpec",
    "TinyCausalSpec",
    "build_tiny_bart",
    "build_tiny_causal_lm",
]
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:
    from .tiny_bart import TinyBartSpec, build_tiny_bart
    from .tiny_causal import TinyCausalSpec, build_tiny_causal_lm
