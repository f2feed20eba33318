"""nugget_core: Nugget (Qin & Van Durme, ICML 2023) for Hugging Face encoder-decoders.

Primary API: `get_nugget_model(hf_model, NuggetConfig(...)) -> NuggetModel` (forward with
``labels``, ``generate``, ``encode -> Nuggets``, ``save_pretrained`` / ``from_pretrained``).
Secondary, reference-package compatible: ``scorer, encoder, decoder = nuggify(hf_model)``.
"""

from .adaptors import get_adaptor, supported_model_types
from .compat import NuggetEncoder, nuggify
from .config import NuggetConfig, ResidualMode, SelectorKind
from .model import NuggetModel, get_nugget_model
from .nuggets import Nuggets, nugget_counts
from .params import ParameterCount, count_parameters
from .scorer import NuggetScorer
from .selectors import (
    ChunkSelector,
    SentenceSelector,
    TopKSelector,
    punctuation_token_ids,
    token_flags,
)
from .tiny import TinyBartSpec, build_tiny_bart, train_bpe_tokenizer

__all__ = [
    "ChunkSelector",
    "NuggetConfig",
    "NuggetEncoder",
    "NuggetModel",
    "NuggetScorer",
    "Nuggets",
    "ParameterCount",
    "ResidualMode",
    "SelectorKind",
    "SentenceSelector",
    "TinyBartSpec",
    "TopKSelector",
    "build_tiny_bart",
    "count_parameters",
    "get_adaptor",
    "get_nugget_model",
    "nugget_counts",
    "nuggify",
    "punctuation_token_ids",
    "supported_model_types",
    "token_flags",
    "train_bpe_tokenizer",
]
