"""nugget_core: Nugget and Nugget2D on unmodified Hugging Face models.

Layout (peft-style, one package per method over shared parts):

- `nugget_core.nugget`: Nugget (Qin & Van Durme, ICML 2023) for encoder-decoders.
  Primary API ``get_nugget_model(hf_model, NuggetConfig(...)) -> NuggetModel`` (forward
  with ``labels``, ``generate``, ``encode -> Nuggets``, ``save_pretrained`` /
  ``from_pretrained``); reference-package style ``scorer, encoder, decoder = nuggify(m)``.
- `nugget_core.nugget2d`: Nugget2D for LLaMA-family decoder-only LMs; its short API
  ``compress_text`` / ``answer`` / ``continue_text`` and ``PromptFormat`` are exported here.
- `nugget_core.baselines`: bottleneck baselines for the seq2seq experiments.
- `nugget_core.restorable`: RE, restorable embeddings (``get_restorable_model(hf_model,
  RestorableConfig(...)) -> RestorableModel``: one restorable vector per passage).
- `nugget_core.adaptors`: one registry of architecture adaptors (`register_adaptor`).
- shared: `scorer`, `selectors`, `nuggets`, `residual`, `modes` (the enums), `params`,
  `config_io`, `tokenizer`.
- `nugget_core.testing`: tiny random-init model builders.

Names below are imported lazily (PEP 562): ``from nugget_core import NuggetConfig``
imports only ``nugget_core.nugget.config``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._lazy import lazy_exports

_EXPORTS = {
    "get_adaptor": ".adaptors",
    "register_adaptor": ".adaptors",
    "supported_model_types": ".adaptors",
    "BaseModelReference": ".checkpoint",
    "NuggetEncoder": ".nugget.compat",
    "nuggify": ".nugget.compat",
    "NuggetConfig": ".nugget.config",
    "ResidualMode": ".nugget.config",
    "SelectorKind": ".nugget.config",
    "NuggetModel": ".nugget.model",
    "CompressedText": ".nugget2d.api",
    "compress_text": ".nugget2d.api",
    "answer": ".nugget2d.api",
    "continue_text": ".nugget2d.api",
    "PromptFormat": ".nugget2d.prompts",
    "NuggetLM": ".nugget.lm",
    "NuggetLMConfig": ".nugget.lm",
    "get_nugget_model": ".nugget.model",
    "Nuggets": ".nuggets",
    "nugget_counts": ".nuggets",
    "ParameterCount": ".params",
    "RestorableConfig": ".restorable.config",
    "RestorableModel": ".restorable.model",
    "get_restorable_model": ".restorable.model",
    "count_parameters": ".params",
    "NuggetScorer": ".scorer",
    "ChunkSelector": ".selectors",
    "SentenceSelector": ".selectors",
    "TopKSelector": ".selectors",
    "punctuation_token_ids": ".selectors",
    "chunk_token_ids": ".selectors",
    "token_flags": ".selectors",
    "TinyBartSpec": ".testing.tiny_bart",
    "build_tiny_bart": ".testing.tiny_bart",
    "train_bpe_tokenizer": ".tokenizer",
}
__all__ = [
    "BaseModelReference",
    "ChunkSelector",
    "CompressedText",
    "NuggetConfig",
    "NuggetEncoder",
    "NuggetLM",
    "NuggetLMConfig",
    "NuggetModel",
    "NuggetScorer",
    "Nuggets",
    "ParameterCount",
    "PromptFormat",
    "ResidualMode",
    "RestorableConfig",
    "RestorableModel",
    "SelectorKind",
    "SentenceSelector",
    "TinyBartSpec",
    "TopKSelector",
    "answer",
    "build_tiny_bart",
    "compress_text",
    "continue_text",
    "count_parameters",
    "get_adaptor",
    "get_nugget_model",
    "get_restorable_model",
    "nugget_counts",
    "nuggify",
    "punctuation_token_ids",
    "chunk_token_ids",
    "register_adaptor",
    "supported_model_types",
    "token_flags",
    "train_bpe_tokenizer",
]
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:  # static analysers see the eager imports
    from .adaptors import get_adaptor, register_adaptor, supported_model_types
    from .checkpoint import BaseModelReference
    from .nugget.compat import NuggetEncoder, nuggify
    from .nugget.config import NuggetConfig, ResidualMode, SelectorKind
    from .nugget.lm import NuggetLM, NuggetLMConfig
    from .nugget.model import NuggetModel, get_nugget_model
    from .nugget2d.api import CompressedText, answer, compress_text, continue_text
    from .nugget2d.prompts import PromptFormat
    from .nuggets import Nuggets, nugget_counts
    from .params import ParameterCount, count_parameters
    from .restorable.config import RestorableConfig
    from .restorable.model import RestorableModel, get_restorable_model
    from .scorer import NuggetScorer
    from .selectors import (
        ChunkSelector,
        SentenceSelector,
        TopKSelector,
        chunk_token_ids,
        punctuation_token_ids,
        token_flags,
    )
    from .testing.tiny_bart import TinyBartSpec, build_tiny_bart
    from .tokenizer import train_bpe_tokenizer
