"""`RestorableEncoder`: passage -> ``e_repr`` (RE §3.1), a module of its own.

It holds the HF encoder stack (shared with the wrapped seq2seq model), the optional
learned [CLS] vector, the optional extra Transformer layers and the projection W, and
nothing of the decoder: the retrieval stage deep-copies it as a DPR tower.

- ``cls`` (eq. 1): ``e_repr = W h(y_1)`` with ``y = [CLS] x``. [CLS] is a learned vector
  prepended to the token embeddings (fed as ``inputs_embeds``), not a vocabulary token: T5
  has no [CLS] token, and a learned vector works the same for BART. It is added after the
  token embedding module, so BART's ``embed_scale`` does not apply to it; its
  initialisation matches the scale of the embedded tokens instead. BART adds positions to
  all ``T + 1`` inputs inside its encoder; T5's relative positions need nothing.
- ``mean`` (eq. 2): ``e_repr = W sum_{i<=T} h(x_i) / sqrt(T)`` over real tokens.

``h`` is the HF encoder's output followed by the extra layers (table 1 (c)/(d)), which
copy the base encoder's heads / FFN size / dropout / activation (post-LN
``nn.TransformerEncoderLayer``; for T5 v1.1's gated FFN a plain FFN with its activation).
"""

from __future__ import annotations

import torch
from torch import nn
from transformers.activations import ACT2FN

from ..typed_access import input_embedding
from .config import Pooling
from .family import LayerSettings
from .pooling import first_position, sqrt_mean_pool

# Activations nn.TransformerEncoderLayer takes by name (the HF ones are identical functions).
_TORCH_ACTIVATIONS = ("relu", "gelu")


def extra_encoder_layers(settings: LayerSettings, count: int) -> nn.ModuleList:
    """``count`` randomly initialised Transformer encoder layers sized like ``settings``."""
    activation = settings.activation if settings.activation in _TORCH_ACTIVATIONS else ACT2FN[settings.activation]
    return nn.ModuleList(
        nn.TransformerEncoderLayer(
            d_model=settings.d_model,
            nhead=settings.heads,
            dim_feedforward=settings.ffn_dim,
            dropout=settings.dropout,
            activation=activation,
            layer_norm_eps=settings.layer_norm_eps,
            batch_first=True,
        )
        for _ in range(count)
    )


class RestorableEncoder(nn.Module):
    """``forward(input_ids, attention_mask) -> e_repr [batch, d_repr]`` (see module doc)."""

    def __init__(self, backbone: nn.Module, pooling: str, d_repr: int, extra_layers: nn.ModuleList) -> None:
        super().__init__()
        embed = input_embedding(backbone)
        d_model = int(embed.embedding_dim)
        self.backbone = backbone
        self.pooling = Pooling(pooling)
        self.extra_layers = extra_layers
        self.proj = nn.Linear(d_model, d_repr, bias=False)  # W of eqs. 1-2
        if self.pooling is Pooling.CLS:
            # The embedded tokens' scale: BART multiplies its table by embed_scale.
            std = float(embed.weight.detach().float().std()) * float(getattr(embed, "embed_scale", 1.0))
            self.cls = nn.Parameter(torch.randn(d_model) * std)
        else:
            self.register_parameter("cls", None)
        self.to(device=embed.weight.device, dtype=embed.weight.dtype)

    def contextualize(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``h`` and its mask: ``[batch, n (+1 for cls), d_model]``; with ``cls``, position 0
        is the [CLS] vector's."""
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        if attention_mask.shape != input_ids.shape:
            raise ValueError(
                f"attention_mask {tuple(attention_mask.shape)} != input_ids {tuple(input_ids.shape)}"
            )
        if self.cls is None:
            hidden = self.backbone(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
        else:
            tokens = input_embedding(self.backbone)(input_ids)
            cls = self.cls.to(tokens.dtype).expand(tokens.shape[0], 1, -1)
            attention_mask = torch.cat([attention_mask.new_ones(attention_mask.shape[0], 1), attention_mask], dim=1)
            hidden = self.backbone(
                inputs_embeds=torch.cat([cls, tokens], dim=1), attention_mask=attention_mask
            ).last_hidden_state
        padding = attention_mask == 0
        for layer in self.extra_layers:
            hidden = layer(hidden, src_key_padding_mask=padding)
        return hidden, attention_mask

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None) -> torch.Tensor:
        """``e_repr [batch, d_repr]`` of each ``input_ids [batch, n]`` passage."""
        hidden, mask = self.contextualize(input_ids, attention_mask)
        pooled = first_position(hidden) if self.pooling is Pooling.CLS else sqrt_mean_pool(hidden, mask)
        return self.proj(pooled)
