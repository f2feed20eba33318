"""`NuggetModel`: an HF encoder-decoder whose decoder reads only the nuggets.

Primary API::

    model = get_nugget_model(hf_seq2seq_model, NuggetConfig(ratio=0.25, scorer_layer=1))
    loss = model(input_ids=..., attention_mask=..., labels=...).loss
    out_ids = model.generate(input_ids=..., attention_mask=..., num_beams=5)
    nuggets = model.encode(input_ids, attention_mask)
    model.save_pretrained(d); model = NuggetModel.from_pretrained(d)

The HF model is not copied or subclassed: an `EncoderTap` hook scores layer ``l`` and a
`CrossAttentionResidual` hook adds the scores to the decoder's cross-attention masks.
`unload()` removes both and returns the untouched HF model.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import save_file
from torch import nn
from transformers import PreTrainedModel
from transformers.modeling_outputs import BaseModelOutput, Seq2SeqLMOutput

from ..adaptors import Seq2SeqAdaptor, get_adaptor
from ..checkpoint import (
    check_hf_model_folder,
    load_json_config,
    load_seq2seq_base,
    mark_nugget_seq2seq,
    read_safetensors,
    require_model_folder,
)
from ..nuggets import Nuggets
from ..params import ParameterCount, count_parameters, decoder_side_parameters, freeze
from ..residual import CrossAttentionResidual
from ..scorer import EncoderPass, NuggetScorer
from ..typed_access import hf_generate
from .config import NuggetConfig
from .encoder_tap import EncoderTap

SCORER_WEIGHTS_NAME = "nugget_scorer.safetensors"

# The HF models a NuggetModel is attached to (until unload): held weakly, so a dropped
# model leaves the set, and outside the model, which is not ours to add attributes to
_ATTACHED: weakref.WeakSet[nn.Module] = weakref.WeakSet()


class NuggetModel(nn.Module):
    """A seq2seq HF model with Nugget attached (see module docstring)."""

    def __init__(self, base_model: PreTrainedModel, config: NuggetConfig) -> None:
        super().__init__()
        if base_model in _ATTACHED:
            raise ValueError("this model already has Nugget attached; unload() it first")
        adaptor = get_adaptor(base_model)  # also checks the attention implementation
        layers = adaptor.encoder_layers(base_model)
        config.check_encoder_depth(len(layers))
        self.config = config
        self.adaptor: Seq2SeqAdaptor = adaptor
        self.base_model = base_model
        self.scorer = NuggetScorer(adaptor.hidden_size(base_model), config).to(
            device=base_model.device, dtype=base_model.dtype
        )
        self.tap = EncoderTap(layers, config.scorer_layer, self.scorer)
        self.residual = CrossAttentionResidual(
            adaptor.cross_attention_modules(base_model),
            config.residual,
            adaptor.cross_mask_kwarg,
            adaptor.cross_states_kwarg,
            scale=adaptor.attention_scale(base_model) if config.scale_residual else 1.0,
        )
        self.scorer._residual = self.residual
        _ATTACHED.add(base_model)
        self._frozen: list[nn.Parameter] = []
        if config.freeze_bottom:
            # Paper 3.3: the features the scorer reads must not drift, so the bottom l
            # encoder layers stay fixed, with or without feedback (7.1 ablates only the
            # feedback). A token embedding tied to the decoder and LM head stays trainable
            # unless asked: freezing it would freeze those too (~256M parameters in mBART-50).
            keep = [] if config.freeze_shared_embeddings else decoder_side_parameters(base_model)
            self._frozen = freeze(
                [*adaptor.embedding_modules(base_model), *layers[: config.scorer_layer]], keep
            )

    # --- encoding -----------------------------------------------------------------

    @contextmanager
    def encoder_pass(
        self,
        attention_mask: torch.Tensor,
        ratio: float | None = None,
        boundary_mask: torch.Tensor | None = None,
    ) -> Iterator[EncoderPass]:
        """Encoder calls within the block are scored (and fed back) at layer ``l``."""
        ratio = self.config.ratio if ratio is None else ratio
        if not 0.0 < ratio <= 1.0:
            raise ValueError(f"ratio={ratio!r} must be in (0, 1]")
        with self.tap.capture(attention_mask, ratio, boundary_mask) as p:
            yield p

    def encode(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        ratio: float | None = None,
        boundary_mask: torch.Tensor | None = None,
    ) -> Nuggets:
        """Encode ``input_ids [batch, n]`` into `Nuggets` (``encoding [batch, k_max, d]``).

        ``ratio`` overrides ``config.ratio``; ``boundary_mask [batch, n]`` feeds the
        rule-based selectors (punctuation / end-of-sentence flags).
        """
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        with self.encoder_pass(attention_mask, ratio, boundary_mask) as p:
            hidden = self.base_model.get_encoder()(
                input_ids=input_ids, attention_mask=attention_mask
            ).last_hidden_state
        return self.scorer.nuggets_from_pass(hidden, p)

    @contextmanager
    def score_context(self, nuggets: Nuggets) -> Iterator[None]:
        """Within the block, decoder cross-attention adds ``nuggets.scores``."""
        with self.residual.active(nuggets.scores):
            yield

    # --- HF-style entry points ----------------------------------------------------

    def forward(
        self,
        input_ids: torch.Tensor | None = None,
        attention_mask: torch.Tensor | None = None,
        labels: torch.Tensor | None = None,
        nuggets: Nuggets | None = None,
        boundary_mask: torch.Tensor | None = None,
        ratio: float | None = None,
        **kwargs: Any,
    ) -> Seq2SeqLMOutput:
        """The HF forward (loss with ``labels=...``) with the decoder reading the nuggets.

        Pass ``nuggets`` to reuse an encoding; any other keyword (``decoder_input_ids``,
        ``decoder_attention_mask``, ``use_cache``, ...) goes to the HF model.
        """
        if nuggets is None:
            if input_ids is None:
                raise ValueError("pass input_ids (or precomputed nuggets)")
            nuggets = self.encode(input_ids, attention_mask, ratio, boundary_mask)
        with self.score_context(nuggets):
            return self.base_model(
                # BART derives decoder inputs from input_ids when neither
                # decoder_input_ids nor labels are given; HF ignores them otherwise.
                input_ids=input_ids,
                encoder_outputs=BaseModelOutput(last_hidden_state=nuggets.encoding),
                attention_mask=nuggets.mask,
                labels=labels,
                **kwargs,
            )

    @torch.no_grad()
    def generate(
        self,
        input_ids: torch.Tensor | None = None,
        attention_mask: torch.Tensor | None = None,
        nuggets: Nuggets | None = None,
        boundary_mask: torch.Tensor | None = None,
        ratio: float | None = None,
        **generate_kwargs: Any,
    ) -> Any:
        """HF ``generate`` (greedy, beam search, sampling, ...) from the nuggets."""
        if nuggets is None:
            if input_ids is None:
                raise ValueError("pass input_ids (or precomputed nuggets)")
            nuggets = self.encode(input_ids, attention_mask, ratio, boundary_mask)
        with self.score_context(nuggets):
            return hf_generate(
                self.base_model,
                encoder_outputs=BaseModelOutput(last_hidden_state=nuggets.encoding),
                attention_mask=nuggets.mask,
                **generate_kwargs,
            )

    # --- bookkeeping --------------------------------------------------------------

    def parameter_counts(self) -> dict[str, ParameterCount]:
        """Trainable / total parameters of the whole model and of its parts."""
        return {
            "total": count_parameters(self),
            "scorer": count_parameters(self.scorer),
            "encoder": count_parameters(self.base_model.get_encoder()),
            "decoder": count_parameters(self.base_model.get_decoder()),
        }

    def unload(self) -> PreTrainedModel:
        """Remove the hooks, unfreeze what was frozen, and return the HF model (its
        weights were never replaced)."""
        self.tap.remove()
        self.residual.remove()
        for p in self._frozen:
            p.requires_grad_(True)
        self._frozen = []
        _ATTACHED.discard(self.base_model)
        return self.base_model

    def save_pretrained(self, directory: str | Path, **kwargs: Any) -> None:
        """Write the HF model (``save_pretrained``), the scorer weights and the config."""
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        self.base_model.save_pretrained(directory, **kwargs)
        mark_nugget_seq2seq(directory)  # a plain HF load warns that the decoder reads nuggets
        state = {k: v.detach().contiguous() for k, v in self.scorer.state_dict().items()}
        save_file(state, str(directory / SCORER_WEIGHTS_NAME))
        self.config.save(directory)

    @classmethod
    def from_pretrained(cls, directory: str | Path, **kwargs: Any) -> NuggetModel:
        """Load what `save_pretrained` wrote; ``kwargs`` go to the HF ``from_pretrained``
        (e.g. ``attn_implementation``). A folder that is not a Nugget model folder (e.g. a
        pipeline stage's output) gets an error naming the ones inside it."""
        directory = require_model_folder(directory, SCORER_WEIGHTS_NAME, "Nugget")
        # every file read and checked before the (slow) HF load: a broken one is named
        config = load_json_config(NuggetConfig, directory)
        scorer = read_safetensors(directory / SCORER_WEIGHTS_NAME)
        base = load_seq2seq_base(check_hf_model_folder(directory), **kwargs)
        model = cls(base, config)
        model.scorer.load_state_dict(scorer)
        return model


def get_nugget_model(
    model: PreTrainedModel, config: NuggetConfig | None = None, **overrides: Any
) -> NuggetModel:
    """Attach Nugget to an HF seq2seq model (BART, mBART, T5). The primary entry point.

    ``overrides`` are `NuggetConfig` fields, applied to ``config`` (or the defaults).
    """
    if config is None:
        config = NuggetConfig(**overrides)
    elif overrides:
        config = NuggetConfig.from_dict({**config.to_dict(), **overrides})
    return NuggetModel(model, config)
