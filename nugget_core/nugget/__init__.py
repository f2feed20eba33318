"""Nugget for Hugging Face encoder-decoders (config, model, encoder tap, compat API).

`config` (NuggetConfig, ResidualMode, SelectorKind), `model` (NuggetModel,
get_nugget_model), `encoder_tap` (scoring inside the unmodified encoder), `compat`
(the reference package's ``nuggify``). Names are imported lazily (PEP 562).
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
    "NuggetEncoder": ".compat",
    "nuggify": ".compat",
}
__all__ = [
    "CONFIG_NAME",
    "EncoderTap",
    "NuggetConfig",
    "NuggetEncoder",
    "NuggetModel",
    "ResidualMode",
    "SCORER_WEIGHTS_NAME",
    "SelectorKind",
    "get_nugget_model",
    "nuggify",
]
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:
    from .compat import NuggetEncoder, nuggify
    from .config import CONFIG_NAME, NuggetConfig, ResidualMode, SelectorKind
    from .encoder_tap import EncoderTap
    from .model import SCORER_WEIGHTS_NAME, NuggetModel, get_nugget_model
