"""The LLaMA family for Nugget2D: LLaMA, Mistral and Qwen2 causal LMs.

In transformers these three share one layout (``model.model.{embed_tokens, layers,
norm, rotary_emb}``, rotary keys cached after rotation, attention through
``ALL_ATTENTION_FUNCTIONS`` with the mask given to the model's forward) so one adaptor
covers them; another family with this layout is one `register_adaptor` call, and
`LlamaFamilyAdaptor.check` refuses it if its facts differ from what this adaptor assumes
(a scaled embedding, another attention scale) or Nugget2D cannot support them.
"""

from __future__ import annotations

import math

from torch import nn
from transformers import PretrainedConfig, PreTrainedModel

from ..typed_access import child
from .base import CausalLMAdaptor
from .facts import FamilyFacts


class LlamaFamilyAdaptor(CausalLMAdaptor):
    """Locates the pieces of a LLaMA-family ``*ForCausalLM`` and reads its facts."""

    def backbone(self, model: PreTrainedModel) -> nn.Module:
        """The decoder stack (``LlamaModel`` & co.), below the LM head."""
        return child(model, "model", nn.Module)

    def layers(self, model: PreTrainedModel) -> nn.ModuleList:
        return child(self.backbone(model), "layers", nn.ModuleList)

    def embed_tokens(self, model: PreTrainedModel) -> nn.Embedding:
        return child(self.backbone(model), "embed_tokens", nn.Embedding)

    def rotary(self, model: PreTrainedModel) -> nn.Module:
        return child(self.backbone(model), "rotary_emb", nn.Module)

    def facts(self, model: PreTrainedModel) -> FamilyFacts:
        """The facts from the HF config: Mistral's ``sliding_window`` applies to every
        layer, Qwen2's only with ``use_sliding_window`` and to the layers its
        ``layer_types`` mark ``"sliding_attention"``; LLaMA has neither."""
        c = model.config
        head_dim = getattr(c, "head_dim", None) or c.hidden_size // c.num_attention_heads
        window = getattr(c, "sliding_window", None)
        if not getattr(c, "use_sliding_window", True):
            window = None  # Qwen2 keeps a window size in configs that do not use it
        declared = getattr(c, "layer_types", None)
        if declared:
            layer_types = tuple(str(t) for t in declared)
            if "sliding_attention" not in layer_types:
                window = None
        else:  # Mistral: one window (or none) for every layer
            kind = "full_attention" if window is None else "sliding_attention"
            layer_types = (kind,) * int(c.num_hidden_layers)
        softcap = getattr(c, "attn_logit_softcapping", None)
        final_softcap = getattr(c, "final_logit_softcapping", None)
        return FamilyFacts(
            # LlamaModel feeds embed_tokens' rows unchanged (`check` verifies the module)
            embedding_scale=1.0,
            attention_scale=float(head_dim) ** -0.5,
            attn_logit_softcapping=None if softcap is None else float(softcap),
            sliding_window=None if window is None else int(window),
            max_positions=int(c.max_position_embeddings),
            layer_types=layer_types,
            rotary_fraction=_rotary_fraction(c),
            keys_cached_after_rotary=True,  # HF rotates q, k before Cache.update
            tied_embeddings=bool(getattr(c, "tie_word_embeddings", False)),
            final_logit_softcapping=None if final_softcap is None else float(final_softcap),
        )

    def check(self, model: PreTrainedModel) -> None:
        """The layout, the facts Nugget2D refuses, then that the model computes what
        `facts` states: a plain embedding module (no scale) and each layer's attention
        ``scaling`` equal to ``attention_scale`` (a family registered here whose
        modules differ, e.g. Gemma's scaled embedding, is refused by name)."""
        if not hasattr(model, "model") or not hasattr(model.model, "layers"):
            raise ValueError(
                f"{type(model).__name__} is not a *ForCausalLM with model.model.layers"
            )
        super().check(model)
        facts, model_type = self.facts(model), model.config.model_type
        embed = self.embed_tokens(model)
        if type(embed).forward is not nn.Embedding.forward:
            raise ValueError(
                f"{type(self).__name__} assumes embedding_scale=1.0 (a plain nn.Embedding) but "
                f"model_type={model_type!r} embeds with {type(embed).__name__}, which transforms "
                "the rows (e.g. Gemma's sqrt(hidden_size)): give the family an adaptor stating "
                "its embedding_scale"
            )
        for i, layer in enumerate(self.layers(model)):
            scaling = getattr(getattr(layer, "self_attn", None), "scaling", None)
            if isinstance(scaling, float) and not math.isclose(scaling, facts.attention_scale):
                raise ValueError(
                    f"{type(self).__name__} reads attention_scale={facts.attention_scale!r} "
                    f"(1/sqrt(head_dim)) but layer {i} of model_type={model_type!r} scales q k^T "
                    f"by {scaling!r} (e.g. Gemma's query_pre_attn_scalar): give the family an "
                    "adaptor stating its attention_scale"
                )


def _rotary_fraction(config: PretrainedConfig) -> float:
    """``partial_rotary_factor`` from ``rope_parameters`` (transformers 5) or the config."""
    rope = getattr(config, "rope_parameters", None)
    if isinstance(rope, dict) and "partial_rotary_factor" in rope:
        return float(rope["partial_rotary_factor"])
    return float(getattr(config, "partial_rotary_factor", None) or 1.0)
