"""RE, restorable embeddings (*RE: A Study for Restorable Embeddings*, docs/papers.md): a passage
encoder whose one vector ``e_repr`` a decoder can restore the passage from, on HF BART / T5.

Primary API::

    cfg = RestorableConfig(pooling="mean", decoder="gating", extra_layers=0, freeze_pretrained=False)
    model = get_restorable_model(hf_seq2seq_model, cfg)
    loss = model(input_ids=..., attention_mask=..., labels=...).loss
    vectors = model.embed(input_ids, attention_mask)               # [batch, d_repr]
    ids = model.generate(input_ids, attention_mask, num_beams=4)   # [batch, L]
    model.encoder                                                   # passage -> e_repr, alone

Modules: `config` (torch-free), `encoder` + `pooling` (§3.1), `decoders` + `gating`
(§3.2-3.3), `family` / `bart` / `t5` / `families` (per-architecture surgery), `generate`
(beam search), `model`. Names resolve lazily, so ``RestorableConfig`` imports no torch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

_EXPORTS = {
    "DecoderKind": ".config",
    "Pooling": ".config",
    "RestorableConfig": ".config",
    "RestorableEncoder": ".encoder",
    "GatingLayer": ".gating",
    "RestorableModel": ".model",
    "get_restorable_model": ".model",
}
__all__ = [
    "DecoderKind",
    "GatingLayer",
    "Pooling",
    "RestorableConfig",
    "RestorableEncoder",
    "RestorableModel",
    "get_restorable_model",
]
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:  # static analysers see the eager imports
    from .config import DecoderKind, Pooling, RestorableConfig
    from .encoder import RestorableEncoder
    from .gating import GatingLayer
    from .model import RestorableModel, get_restorable_model
