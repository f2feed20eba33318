"""Nugget for Hugging Face encoder-decoders (config, model, encoder tap, compat API).

`config` (NuggetConfig, ResidualMode, SelectorKind), `model` (NuggetModel,
get_nugget_model), `encoder_tap` (scoring inside the unmodified encoder), `compat`
(the reference package's ``nuggify``), `lm` / `lm_windows` (the Nugget LM of §6.2).
Names are imported lazily (PEP 562).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

_EXPORTS = {
    "CONFIG_NAME": ".config",
    "NuggetConfig": ".config",
    "ResidualMode": ".config",
    "SelectorKind": ".config",
    "NuggetModel": ".model",
    "get_nugget_model": ".model",
    "SCORER_WEIGHTS_NAME": ".model",
    "EncoderTap": ".encoder_tap",
    "MemoryKind": ".lm",
    "NuggetLM": ".lm",
    "NuggetLMConfig": ".lm",
    "SpecialTokens": ".lm_windows",
    "Window": ".lm_windows",
    "collate_windows": ".lm_windows",
    "history_spans": ".lm_windows",
    "windows": ".lm_windows",
    "NuggetEncoder": ".compat",
    "nuggify": ".compat",
}
__all__ = [
    "CONFIG_NAME",
    "EncoderTap",
    "MemoryKind",
    "NuggetConfig",
    "NuggetEncoder",
    "NuggetLM",
    "NuggetLMConfig",
    "NuggetModel",
    "ResidualMode",
    "SCORER_WEIGHTS_NAME",
    "SelectorKind",
    "SpecialTokens",
    "Window",
    "collate_windows",
    "get_nugget_model",
    "history_spans",
    "nuggify",
    "windows",
]
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:
    from .compat import NuggetEncoder, nuggify
    from .config import CONFIG_NAME, NuggetConfig, ResidualMode, SelectorKind
    from .encoder_tap import EncoderTap
    from .lm import MemoryKind, NuggetLM, NuggetLMConfig
    from .lm_windows import SpecialTokens, Window, collate_windows, history_spans, windows
    from .model import SCORER_WEIGHTS_NAME, NuggetModel, get_nugget_model
