"""`BottleneckModel`: an HF encoder-decoder whose decoder reads one mean-pooled vector.

The HF model is not forked: encoding calls its encoder and pools; decoding calls the HF
model with ``encoder_outputs`` set to that vector ``[batch, 1, d]``. The gating decoder
swaps each decoder layer's cross-attention module for a `GatingLayer` (the decoder
layer's residual and layer norm stay the HF ones, RE fig. 2(c)).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_model
from torch import nn
from transformers import AutoConfig, AutoModelForSeq2SeqLM, PreTrainedModel
from transformers.modeling_outputs import BaseModelOutput, Seq2SeqLMOutput

from ..adaptors import get_adaptor
from ..remote_code import refuse_remote_code
from ..restorable.gating import GatingLayer
from ..typed_access import hf_generate
from ..weights import save_weights
from .config import BottleneckConfig, DecoderKind

WEIGHTS_NAME = "bottleneck.safetensors"
# Decoder layers that call their cross-attention as `encoder_attn(hidden, key_value_states=...)`.
GATING_MODEL_TYPES = ("bart", "mbart")


def mean_pool(hidden: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    """``hidden [batch, n, d]`` averaged over real tokens of ``attention_mask [batch, n]`` -> ``[batch, d]``."""
    weights = attention_mask.to(hidden.dtype).unsqueeze(-1)
    return (hidden * weights).sum(dim=1) / weights.sum(dim=1).clamp(min=1.0)


def _replace_module(root: nn.Module, old: nn.Module, new: nn.Module) -> None:
    for parent in root.modules():
        for name, child in parent.named_children():
            if child is old:
                setattr(parent, name, new)
                return
    raise ValueError("module to replace is not part of the model")


class BottleneckModel(nn.Module):
    """TSDAE / RE: encoder -> mean pool -> one vector -> decoder (see module docstring)."""

    def __init__(self, base_model: PreTrainedModel, config: BottleneckConfig) -> None:
        super().__init__()
        self.config = config
        self.base_model = base_model
        if config.decoder == DecoderKind.GATING:
            if base_model.config.model_type not in GATING_MODEL_TYPES:
                raise ValueError(
                    f"the gating decoder supports {GATING_MODEL_TYPES}, not {base_model.config.model_type!r}"
                )
            d_model = int(base_model.config.d_model)
            modules = get_adaptor(base_model).cross_attention_modules(base_model)
            for index, module in enumerate(modules):
                layer = GatingLayer(d_model, config.repr_dim or d_model, getattr(module, "layer_idx", index))
                _replace_module(base_model, module, layer.to(base_model.device, base_model.dtype))
            if config.repr_dim not in (None, d_model):
                raise ValueError(
                    "repr_dim != d_model needs a projection of e_repr; not implemented"
                )

    def embed(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None
    ) -> torch.Tensor:
        """The single vector ``[batch, d]`` of each ``input_ids [batch, n]`` sequence."""
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        hidden = self.base_model.get_encoder()(
            input_ids=input_ids, attention_mask=attention_mask
        ).last_hidden_state
        return mean_pool(hidden, attention_mask)

    def _decoder_inputs(
        self,
        input_ids: torch.Tensor | None,
        attention_mask: torch.Tensor | None,
        vectors: torch.Tensor | None,
        hf_kwargs: dict[str, Any],
    ) -> tuple[BaseModelOutput, torch.Tensor]:
        """The one-position encoder output (``vectors``, computed from ``input_ids`` when
        not given) and its mask."""
        if vectors is None:
            if input_ids is None:
                raise ValueError("pass input_ids (or precomputed vectors)")
            vectors = self.embed(input_ids, attention_mask)
        ones = torch.ones(vectors.shape[0], 1, dtype=torch.long, device=vectors.device)
        return BaseModelOutput(last_hidden_state=vectors[:, None, :]), ones

    def forward(
        self,
        input_ids: torch.Tensor | None = None,
        attention_mask: torch.Tensor | None = None,
        labels: torch.Tensor | None = None,
        vectors: torch.Tensor | None = None,
        **kwargs: Any,
    ) -> Seq2SeqLMOutput:
        """HF forward (loss with ``labels``) with the decoder reading ``vectors [batch, d]``
        (computed from ``input_ids`` when not given)."""
        encoder_outputs, mask = self._decoder_inputs(input_ids, attention_mask, vectors, kwargs)
        return self.base_model(
            input_ids=input_ids,
            encoder_outputs=encoder_outputs,
            attention_mask=mask,
            labels=labels,
            **kwargs,
        )

    @torch.no_grad()
    def generate(
        self,
        input_ids: torch.Tensor | None = None,
        attention_mask: torch.Tensor | None = None,
        vectors: torch.Tensor | None = None,
        **generate_kwargs: Any,
    ) -> Any:
        """HF ``generate`` from the single vector (beam search included)."""
        encoder_outputs, mask = self._decoder_inputs(
            input_ids, attention_mask, vectors, generate_kwargs
        )
        return hf_generate(
            self.base_model, encoder_outputs=encoder_outputs, attention_mask=mask, **generate_kwargs
        )

    def save_pretrained(self, directory: str | Path) -> None:
        """HF config + every weight (gating layers included) + the bottleneck config."""
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        self.base_model.config.save_pretrained(directory)
        save_weights(self.base_model, str(directory / WEIGHTS_NAME))
        self.config.save(directory)

    @classmethod
    def from_pretrained(cls, directory: str | Path, **kwargs: Any) -> BottleneckModel:
        """Rebuild what `save_pretrained` wrote; ``kwargs`` go to ``from_config``."""
        directory = Path(directory)
        config = AutoConfig.from_pretrained(directory, trust_remote_code=False)
        base = AutoModelForSeq2SeqLM.from_config(config, **refuse_remote_code(kwargs))
        model = cls(base, BottleneckConfig.load(directory))
        load_model(model.base_model, str(directory / WEIGHTS_NAME))
        return model.eval()


def get_bottleneck_model(
    model: PreTrainedModel, config: BottleneckConfig | None = None, **overrides: Any
) -> BottleneckModel:
    """Wrap an HF seq2seq model as a single-vector baseline (``overrides``: config fields)."""
    if config is None:
        config = BottleneckConfig(**overrides)
    elif overrides:
        config = BottleneckConfig(**{**config.to_dict(), **overrides})
    return BottleneckModel(model, config)
