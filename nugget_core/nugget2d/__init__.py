"""Nugget2D (decoder-only LMs): compressor and autoregressive modes, baselines, loaders.

See `model` (compressor mode), `autoregressive` / `stream` (autoregressive mode),
`bias` (the one attention-bias builder), `objectives` (losses), `baselines` (Full,
Compressive), `presses` / `press_stream` (training-free KV presses at the same budget),
`systems` (the context each compressor-mode system reads at one budget),
`icae` (ICAE memory slots, the autoencoding baseline), `calibration` (Lambda),
`smollm2` (offline model), `prompts` (the task-prompt layout) and `api` (compress a text,
answer questions about it or continue it). Names are imported lazily (PEP 562): ``from nugget_core.nugget2d import Nugget2DConfig`` loads no torch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

_EXPORTS = {
    "CompressedText": ".api",
    "answer": ".api",
    "compress_text": ".api",
    "continue_text": ".api",
    "AROutput": ".autoregressive",
    "ARWindows": ".autoregressive",
    "ar_forward": ".autoregressive",
    "ar_loss": ".autoregressive",
    "ar_scores": ".autoregressive",
    "CompressiveStream": ".baselines",
    "baseline_lm_loss": ".baselines",
    "FullStream": ".baselines",
    "stream_nll": ".baselines",
    "window_nll": ".baselines",
    "CompressiveLayout": ".compressive",
    "compressive_forward": ".compressive",
    "calibration_scores": ".calibration",
    "realised_ratio": ".calibration",
    "threshold_for_ratio": ".calibration",
    "COMPRESSOR": ".config",
    "DECODER": ".config",
    "Nugget2DConfig": ".config",
    "CompressedContext": ".context",
    "GenerationResult": ".generation",
    "ICAEModel": ".icae",
    "icae_slots": ".icae",
    "load_icae": ".icae",
    "save_icae": ".icae",
    "generate_from_context": ".generation",
    "LayerKV": ".kv",
    "cache_nbytes": ".kv",
    "Nugget2DModel": ".model",
    "Nugget2DOutput": ".model",
    "Objective": ".objectives",
    "PRESSES": ".presses",
    "PressConfig": ".presses",
    "press_context": ".presses",
    "PressStream": ".press_stream",
    "PROMPT_FORMATS": ".prompts",
    "PromptFormat": ".prompts",
    "autoencoding_loss": ".objectives",
    "continuation_loss": ".objectives",
    "finetune_loss": ".objectives",
    "objective_loss": ".objectives",
    "set_objective": ".objectives",
    "Nugget2DUsage": ".persistence",
    "load_nugget2d": ".persistence",
    "load_scorer": ".persistence",
    "save_nugget2d": ".persistence",
    "find_smollm2_package": ".smollm2",
    "load_gguf_model": ".smollm2",
    "prepare_smollm2": ".smollm2",
    "truncate_layers": ".smollm2",
    "Nugget2DStream": ".stream",
    "SYSTEMS": ".systems",
    "SystemContext": ".systems",
    "empty_context": ".systems",
    "system_context": ".systems",
    "TinyCausalSpec": "..testing.tiny_causal",
    "build_tiny_causal_lm": "..testing.tiny_causal",
}
__all__ = [
    "AROutput",
    "ARWindows",
    "COMPRESSOR",
    "CompressedContext",
    "CompressedText",
    "CompressiveLayout",
    "CompressiveStream",
    "DECODER",
    "FullStream",
    "GenerationResult",
    "ICAEModel",
    "LayerKV",
    "Nugget2DConfig",
    "Nugget2DModel",
    "Nugget2DOutput",
    "Nugget2DStream",
    "Objective",
    "PRESSES",
    "PROMPT_FORMATS",
    "PressConfig",
    "PressStream",
    "PromptFormat",
    "SYSTEMS",
    "SystemContext",
    "TinyCausalSpec",
    "answer",
    "ar_forward",
    "ar_loss",
    "ar_scores",
    "autoencoding_loss",
    "baseline_lm_loss",
    "build_tiny_causal_lm",
    "cache_nbytes",
    "empty_context",
    "calibration_scores",
    "compress_text",
    "compressive_forward",
    "continue_text",
    "continuation_loss",
    "find_smollm2_package",
    "finetune_loss",
    "generate_from_context",
    "icae_slots",
    "load_icae",
    "Nugget2DUsage",
    "load_nugget2d",
    "load_scorer",
    "objective_loss",
    "load_gguf_model",
    "prepare_smollm2",
    "press_context",
    "realised_ratio",
    "save_icae",
    "save_nugget2d",
    "set_objective",
    "stream_nll",
    "window_nll",
    "system_context",
    "threshold_for_ratio",
    "truncate_layers",
]
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:
    from ..testing.tiny_causal import TinyCausalSpec, build_tiny_causal_lm
    from .api import CompressedText, answer, compress_text, continue_text
    from .autoregressive import AROutput, ARWindows, ar_forward, ar_loss, ar_scores
    from .baselines import CompressiveStream, FullStream, baseline_lm_loss, stream_nll, window_nll
    from .calibration import calibration_scores, realised_ratio, threshold_for_ratio
    from .compressive import CompressiveLayout, compressive_forward
    from .config import COMPRESSOR, DECODER, Nugget2DConfig
    from .context import CompressedContext
    from .generation import GenerationResult, generate_from_context
    from .icae import ICAEModel, icae_slots, load_icae, save_icae
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
    from .persistence import Nugget2DUsage, load_nugget2d, load_scorer, save_nugget2d
    from .press_stream import PressStream
    from .presses import PRESSES, PressConfig, press_context
    from .prompts import PROMPT_FORMATS, PromptFormat
    from .smollm2 import find_smollm2_package, load_gguf_model, prepare_smollm2, truncate_layers
    from .stream import Nugget2DStream
    from .systems import SYSTEMS, SystemContext, empty_context, system_context
