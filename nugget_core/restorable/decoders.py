"""The three RE decoders over the wrapped HF decoder stack (RE §3.2-3.3, fig. 2).

All three run the HF decoder on input *embeddings* with the same causal + padding mask
and the family's LM head; they differ only in the first decoder input and in what the
decoder reads besides its inputs:

- ``input`` (fig. 2a): inputs ``[e_repr, e(x_1..x_L)]``, no cross-attention (removed from
  the model), targets ``[x_1..x_L, EOS]``.
- ``cross`` (fig. 2b): inputs ``[e(start), e(x_1..x_L)]`` (HF's shift-right of the
  labels), cross-attention over ``e_repr`` as the only key / value ``[batch, 1, d]``.
- ``gating`` (fig. 2c): as ``cross``, with the gating layer in place of cross-attention.

``e(.)`` is the decoder's own token embedding module (BART's includes its scale). The
same `DecodingSession` drives cached step-by-step decoding for all three, so training,
scoring and generation share one definition of each decoder.
"""

from __future__ import annotations

import torch
from torch import nn
from transformers import PreTrainedModel
from transformers.cache_utils import Cache, DynamicCache, EncoderDecoderCache

from ..typed_access import input_embedding
from .config import DecoderKind
from .family import Seq2SeqFamily


def config_token_id(model: PreTrainedModel, name: str) -> int:
    """``model.config.<name>`` as one int; ValueError naming the field when missing."""
    value = getattr(model.config, name, None)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"the RE model needs {type(model.config).__name__}.{name} as one int, got {value!r}")
    return value


class DecoderSide:
    """The wrapped model's decoder, driven as RE decoder ``kind`` (not an nn.Module: its
    parameters belong to the HF model)."""

    def __init__(self, model: PreTrainedModel, family: Seq2SeqFamily, kind: DecoderKind) -> None:
        self.model = model
        self.family = family
        self.kind = DecoderKind(kind)
        self.pad_token_id = config_token_id(model, "pad_token_id")
        self.start_token_id = (
            None if self.kind is DecoderKind.INPUT else config_token_id(model, "decoder_start_token_id")
        )

    @property
    def stack(self) -> nn.Module:
        return self.model.get_decoder()

    def embed(self, token_ids: torch.Tensor) -> torch.Tensor:
        """``e(.)``: the decoder's token embedding of ``token_ids [batch, n]``."""
        return input_embedding(self.stack)(token_ids)

    def first_input(self, e_repr: torch.Tensor) -> torch.Tensor:
        """The decoder's first input embedding ``[batch, 1, d_model]``: ``e_repr`` itself
        (input decoder) or the embedded decoder start token (cross / gating)."""
        if self.start_token_id is None:  # the input decoder (__init__)
            # the dtype of the embedded tokens it is concatenated with (under autocast e_repr may differ)
            return e_repr[:, None, :].to(input_embedding(self.stack).weight.dtype)
        start = torch.full((e_repr.shape[0], 1), self.start_token_id, dtype=torch.long, device=e_repr.device)
        return self.embed(start)

    def run(
        self,
        e_repr: torch.Tensor,
        inputs_embeds: torch.Tensor,
        attention_mask: torch.Tensor | None,
        cache: Cache | None,
    ) -> torch.Tensor:
        """Logits ``[batch, n, vocab]`` of the decoder on ``inputs_embeds`` (continuing
        ``cache`` when given; ``attention_mask`` then None: no padding while decoding)."""
        reads: dict[str, torch.Tensor] = {}
        if self.kind is not DecoderKind.INPUT:
            reads = {
                "encoder_hidden_states": e_repr[:, None, :],
                "encoder_attention_mask": torch.ones(e_repr.shape[0], 1, dtype=torch.long, device=e_repr.device),
            }
        hidden = self.stack(
            inputs_embeds=inputs_embeds,
            attention_mask=attention_mask,
            past_key_values=cache,
            use_cache=cache is not None,
            **reads,
        ).last_hidden_state
        return self.family.lm_logits(self.model, hidden)

    def teacher_forced(self, e_repr: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        """Logits ``[batch, L, vocab]`` predicting ``labels [batch, L]`` (targets
        ``[x_1..x_L, EOS]`` right-padded with -100): decoder inputs are the first input then
        the embedded ``labels[:, :-1]``."""
        previous = labels[:, :-1]
        real = previous != -100
        embeds = torch.cat([self.first_input(e_repr), self.embed(previous.masked_fill(~real, self.pad_token_id))], 1)
        mask = torch.cat([real.new_ones(real.shape[0], 1), real], dim=1).long()
        return self.run(e_repr, embeds, mask, cache=None)

    def session(self, e_repr: torch.Tensor) -> DecodingSession:
        """Cached incremental decoding of one sequence per row of ``e_repr``."""
        return DecodingSession(self, e_repr)


class DecodingSession:
    """Step-by-step decoding with a KV cache (and the gating layers' running sums in the
    cross-attention cache); `reorder` follows beam search's choice of beams."""

    def __init__(self, side: DecoderSide, e_repr: torch.Tensor) -> None:
        self.side = side
        self.e_repr = e_repr
        self.cache: Cache = (
            DynamicCache() if side.kind is DecoderKind.INPUT else EncoderDecoderCache(DynamicCache(), DynamicCache())
        )

    def start(self) -> torch.Tensor:
        """Logits ``[batch, vocab]`` of the first target token."""
        return self.side.run(self.e_repr, self.side.first_input(self.e_repr), None, self.cache)[:, -1]

    def step(self, tokens: torch.Tensor) -> torch.Tensor:
        """Feed ``tokens [batch]`` (the previous step's choice) -> logits ``[batch, vocab]`` of the next."""
        return self.side.run(self.e_repr, self.side.embed(tokens[:, None]), None, self.cache)[:, -1]

    def reorder(self, rows: torch.Tensor) -> None:
        """Continue row ``rows[i]``'s state in row ``i`` (beam search)."""
        # transformers annotates beam_idx as the legacy torch.LongTensor class, which no
        # tensor is typed as; any int64 tensor is what it indexes with
        self.cache.reorder_cache(rows)  # type: ignore[arg-type]
        self.e_repr = self.e_repr.index_select(0, rows)
