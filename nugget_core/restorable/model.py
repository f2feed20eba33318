"""`RestorableModel`: RE (restorable embeddings) on an unmodified HF encoder-decoder.

``encoder`` (`RestorableEncoder`) maps a passage to one vector ``e_repr``; the wrapped
model's decoder, turned into the configured RE decoder (`nugget_core.restorable.decoders`),
restores the passage from it (eq. 6: autoregressive cross-entropy).

Freezing (table 1 (b)/(d)) stops gradients to the pretrained encoder: its layers, norms,
position embeddings and token embedding. BART and T5 share one embedding table between
encoder, decoder and LM head, and the decoder always trains: with
``freeze_encoder_embedding`` (the default, RE §4.2's reading) the encoder gets its own
frozen copy of the table (`untie_encoder_embedding`) and the decoder's keeps training;
without it the shared table trains and changes the encoder's input embeddings too. An
untied embedding (the pipeline's tiny BART) is frozen either way. The new parts (the
[CLS] vector, the extra layers, W, the gating layers) always train.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from safetensors.torch import load_model
from torch import nn
from transformers import AutoConfig, AutoModelForSeq2SeqLM, PreTrainedModel
from transformers.modeling_outputs import Seq2SeqLMOutput

from ..params import decoder_side_parameters, freeze
from ..remote_code import refuse_remote_code
from ..weights import save_weights
from .config import DecoderKind, RestorableConfig
from .decoders import DecoderSide, config_token_id
from .encoder import RestorableEncoder, extra_encoder_layers
from .families import get_family
from .generate import beam_search

WEIGHTS_NAME = "restorable.safetensors"


class RestorableModel(nn.Module):
    """RE encoder + decoder over ``base_model`` (see module doc); build with
    `get_restorable_model`."""

    def __init__(self, base_model: PreTrainedModel, config: RestorableConfig) -> None:
        super().__init__()
        family = get_family(base_model)
        d_model = int(base_model.config.d_model)
        d_repr = config.resolved_repr_dim(d_model)
        self.config = config
        self.base_model = base_model
        layers = extra_encoder_layers(family.encoder_layer_settings(base_model), config.extra_layers)
        self.encoder = RestorableEncoder(base_model.get_encoder(), config.pooling, d_repr, layers)
        if config.decoder == DecoderKind.INPUT:
            family.remove_cross_attention(base_model)
        elif config.decoder == DecoderKind.GATING:
            family.install_gating(base_model, d_repr)
        self.decoder_side = DecoderSide(base_model, family, DecoderKind(config.decoder))
        if config.freeze_pretrained:
            if config.freeze_encoder_embedding:
                untie_encoder_embedding(base_model)
            freeze([self.encoder.backbone], keep=decoder_side_parameters(base_model))

    def embed(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None) -> torch.Tensor:
        """``e_repr [batch, d_repr]`` of each passage ``input_ids [batch, n]``."""
        return self.encoder(input_ids, attention_mask)

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        labels: torch.Tensor | None = None,
    ) -> Seq2SeqLMOutput:
        """Teacher-forced restoration of the passage: ``.logits [batch, L, vocab]`` predicting
        ``labels [batch, L]`` (the target ids ``[x_1..x_L, EOS]``, right-padded with -100)
        and ``.loss``, the mean cross-entropy over ``labels != -100``."""
        if labels is None:
            raise ValueError("RestorableModel.forward needs labels (the target ids, padded with -100)")
        if labels.shape[0] != input_ids.shape[0]:
            raise ValueError(f"labels {tuple(labels.shape)} and input_ids {tuple(input_ids.shape)}: batch sizes differ")
        e_repr = self.encoder(input_ids, attention_mask)
        logits = self.decoder_side.teacher_forced(e_repr, labels.to(e_repr.device))
        loss = F.cross_entropy(logits.float().flatten(0, 1), labels.to(logits.device).flatten(), ignore_index=-100)
        return Seq2SeqLMOutput(loss=loss, logits=logits)

    @torch.no_grad()
    def generate(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        num_beams: int = 4,
        max_new_tokens: int = 64,
        early_stopping: bool = True,
        length_penalty: float = 1.0,
    ) -> torch.Tensor:
        """Restored target ids ``[batch, L]`` of the passages ``input_ids``: `restore` of
        their `embed`. Call ``eval()`` first, as with HF ``generate``, to decode without
        dropout."""
        return self.restore(self.encoder(input_ids, attention_mask), num_beams, max_new_tokens, early_stopping,
                            length_penalty)

    @torch.no_grad()
    def restore(
        self,
        e_repr: torch.Tensor,
        num_beams: int = 4,
        max_new_tokens: int = 64,
        early_stopping: bool = True,
        length_penalty: float = 1.0,
    ) -> torch.Tensor:
        """The text ids restored from embeddings alone, ``e_repr [batch, d_repr]`` (what
        `embed` returns): the generated tokens only (no decoder start token; BART's usually
        begin with ``<s>`` like its labels), ending with EOS (unless cut at
        ``max_new_tokens``), right-padded with ``pad_token_id``. Same beam search for every
        decoder (`nugget_core.restorable.generate`); ``num_beams=1`` is greedy."""
        return beam_search(
            self.decoder_side.session(e_repr.repeat_interleave(num_beams, dim=0)),
            batch_size=e_repr.shape[0],
            num_beams=num_beams,
            max_new_tokens=max_new_tokens,
            eos_token_id=config_token_id(self.base_model, "eos_token_id"),
            pad_token_id=self.decoder_side.pad_token_id,
            early_stopping=early_stopping,
            length_penalty=length_penalty,
        )

    def save_pretrained(self, directory: str | Path) -> None:
        """HF config (``config.json``) + every weight (new parts included) + the RE config."""
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        self.base_model.config.save_pretrained(directory)
        save_weights(self, str(directory / WEIGHTS_NAME))
        self.config.save(directory)

    @classmethod
    def from_pretrained(cls, directory: str | Path, **kwargs: Any) -> RestorableModel:
        """Rebuild what `save_pretrained` wrote, in eval mode; ``kwargs`` go to HF ``from_config``."""
        directory = Path(directory)
        weights = directory / WEIGHTS_NAME
        if not weights.is_file():
            raise FileNotFoundError(f"{weights}: not a RestorableModel folder (no {WEIGHTS_NAME})")
        config = AutoConfig.from_pretrained(directory, trust_remote_code=False)
        base = AutoModelForSeq2SeqLM.from_config(config, **refuse_remote_code(kwargs))
        model = cls(base, RestorableConfig.load(directory))
        load_model(model, str(weights))
        return model.eval()

    @classmethod
    def encoder_from_pretrained(cls, directory: str | Path, **kwargs: Any) -> RestorableEncoder:
        """Only the `RestorableEncoder` of a saved model, with its weights (eval mode)."""
        return cls.from_pretrained(directory, **kwargs).encoder


def untie_encoder_embedding(model: PreTrainedModel) -> bool:
    """Give the encoder of ``model`` its own copy of its token embedding table when the
    decoder or the LM head shares it (in place); returns whether it did. The copy holds the
    same values, so the model computes the same function until either side trains."""
    encoder = model.get_encoder()
    table = encoder.get_input_embeddings()
    if id(table.weight) not in {id(p) for p in decoder_side_parameters(model)}:
        return False
    encoder.set_input_embeddings(copy.deepcopy(table))
    return True


def get_restorable_model(
    model: PreTrainedModel, config: RestorableConfig | None = None, **overrides: Any
) -> RestorableModel:
    """Wrap an HF BART / T5 ``*ForConditionalGeneration`` as an RE model (in place: its
    decoder's cross-attention is replaced or removed; new parameters are drawn from the
    caller's torch RNG). ``overrides``: config fields."""
    if config is None:
        config = RestorableConfig(**overrides)
    elif overrides:
        config = RestorableConfig(**{**config.to_dict(), **overrides})
    return RestorableModel(model, config)
