"""Nugget2D (decoder-only LMs): compressor and autoregressive modes, baselines, loaders.

See `model` (compressor mode), `autoregressive` / `stream` (autoregressive mode),
`baselines` (Full, Compressive), `calibration` (Lambda), `smollm2` (offline model).
"""

from .autoregressive import AROutput, ARWindows, ar_forward, ar_loss, ar_scores
from .baselines import CompressiveStream, FullStream, stream_nll
from .calibration import calibration_scores, realised_ratio, threshold_for_ratio
from .config import COMPRESSOR, DECODER, Nugget2DConfig
from .context import CompressedContext
from .generation import GenerationResult, generate_from_context
from .kv import LayerKV, cache_nbytes
from .model import Nugget2DModel, Nugget2DOutput
from .objectives import (
    Objective,
    autoencoding_loss,
    continuation_loss,
    finetune_loss,
    objective_loss,
    set_objective,
)
from .persistence import load_nugget2d, load_scorer, save_nugget2d
from .smollm2 import find_smollm2_package, prepare_smollm2, truncate_layers
from .stream import Nugget2DStream
from .tiny import TinyCausalSpec, build_tiny_causal_lm

__all__ = [
    "COMPRESSOR",
    "DECODER",
    "AROutput",
    "ARWindows",
    "CompressedContext",
    "CompressiveStream",
    "FullStream",
    "GenerationResult",
    "LayerKV",
    "Nugget2DConfig",
    "Nugget2DModel",
    "Nugget2DOutput",
    "Nugget2DStream",
    "Objective",
    "TinyCausalSpec",
    "ar_forward",
    "ar_loss",
    "ar_scores",
    "autoencoding_loss",
    "build_tiny_causal_lm",
    "cache_nbytes",
    "calibration_scores",
    "continuation_loss",
    "finetune_loss",
    "find_smollm2_package",
    "generate_from_context",
    "load_nugget2d",
    "load_scorer",
    "objective_loss",
    "prepare_smollm2",
    "realised_ratio",
    "save_nugget2d",
    "set_objective",
    "stream_nll",
    "threshold_for_ratio",
    "truncate_layers",
]
