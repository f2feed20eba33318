"""The LLaMA family for Nugget2D: LLaMA, Mistral and Qwen2 causal LMs.

In transformers these three share one layout (``model.model.{embed_tokens, layers,
norm, rotary_emb}``, rotary keys cached after rotation, attention through
``ALL_ATTENTION_FUNCTIONS`` with the mask given to the model's forward) so one adaptor
covers them. Like the seq2seq adaptors it only *locates* modules; Nugget2D drives the
unmodified model through 4D masks, position ids and cache objects.
"""

from __future__ import annotations

from torch import nn
from transformers import PreTrainedModel

SUPPORTED_ATTENTION = ("eager", "sdpa")


class LlamaFamilyAdaptor:
    """Locates the pieces of a LLaMA-family ``*ForCausalLM``."""

    model_types: tuple[str, ...] = ("llama", "mistral", "qwen2")

    def backbone(self, model: PreTrainedModel) -> nn.Module:
        """The decoder stack (``LlamaModel`` & co.), below the LM head."""
        return model.model

    def layers(self, model: PreTrainedModel) -> nn.ModuleList:
        return self.backbone(model).layers

    def embed_tokens(self, model: PreTrainedModel) -> nn.Embedding:
        return self.backbone(model).embed_tokens

    def rotary(self, model: PreTrainedModel) -> nn.Module:
        return self.backbone(model).rotary_emb

    def hidden_size(self, model: PreTrainedModel) -> int:
        return int(model.config.hidden_size)


def get_causal_adaptor(model: PreTrainedModel) -> LlamaFamilyAdaptor:
    """The adaptor for ``model``; a clear error for any other architecture."""
    config = getattr(model, "config", None)
    model_type = getattr(config, "model_type", None)
    if model_type not in LlamaFamilyAdaptor.model_types or getattr(
        config, "is_encoder_decoder", False
    ):
        raise ValueError(
            f"Nugget2D does not support model_type={model_type!r} ({type(model).__name__}); "
            f"supported causal LMs: {', '.join(LlamaFamilyAdaptor.model_types)}"
        )
    if not hasattr(model, "model") or not hasattr(model.model, "layers"):
        raise ValueError(f"{type(model).__name__} is not a *ForCausalLM with model.model.layers")
    implementation = config._attn_implementation
    if implementation not in SUPPORTED_ATTENTION:
        raise ValueError(
            f"attn_implementation={implementation!r} is not supported by Nugget2D (nugget "
            f"scores ride on an additive float mask); use one of {SUPPORTED_ATTENTION}"
        )
    return LlamaFamilyAdaptor()
