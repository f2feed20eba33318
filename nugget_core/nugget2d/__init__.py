"""Nugget2D (decoder-only LMs): compressor and autoregressive modes, baselines, loaders."""

from .config import COMPRESSOR, DECODER, Nugget2DConfig
from .context import CompressedContext
from .kv import LayerKV, cache_nbytes
from .model import Nugget2DModel, Nugget2DOutput
from .tiny import TinyCausalSpec, build_tiny_causal_lm

__all__ = [
    "COMPRESSOR",
    "DECODER",
    "CompressedContext",
    "LayerKV",
    "Nugget2DConfig",
    "Nugget2DModel",
    "Nugget2DOutput",
    "TinyCausalSpec",
    "build_tiny_causal_lm",
    "cache_nbytes",
]
