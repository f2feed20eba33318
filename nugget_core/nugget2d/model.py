"""`Nugget2DModel`: a LLaMA-family LM with a scorer and the adapters phi and theta.

Compressor mode (paper 2.4)::

    model = Nugget2DModel.from_lm("path/to/hf_folder", Nugget2DConfig(ratio=0.1))
    ctx = model.compress(doc_ids, doc_mask)            # k = ceil(r n) positions per layer
    out = model(doc_ids, doc_mask, prompt_ids, prompt_mask, answer_ids, answer_mask)
    out.loss.backward()

The base LM is never copied or subclassed: peft injects the two LoRA adapters, an
`AdapterRouter` gates them per pass, and each pass is a plain HF forward given a cache
object, position ids and a 4D float mask (`nugget_core.nugget2d.context`).
Autoregressive mode lives in `nugget_core.nugget2d.autoregressive`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from peft import PeftModel
from torch import nn
from transformers import AutoModelForCausalLM, DynamicCache, PreTrainedModel

from ..adaptors.llama import get_causal_adaptor
from ..nuggets import gather_tokens, selection_to_indices
from ..scorer import NuggetScorer
from ..selectors import TopKSelector
from .adapters import AdapterRouter, attach_adapters
from .config import COMPRESSOR, DECODER, Nugget2DConfig
from .context import (
    CompressedContext,
    continuation_positions,
    decoder_visibility,
    float_mask,
    gather_rows,
    key_bias,
    pack_segments,
)
from .features import FrozenFeatures
from .kv import LayerKV


@dataclass
class Nugget2DOutput:
    """``loss`` (mean NLL of the answer tokens), ``logits [batch, m, vocab]`` of the packed
    decoder tokens, ``labels [batch, m]`` (-100 where no loss) and the ``context``."""

    loss: torch.Tensor
    logits: torch.Tensor
    labels: torch.Tensor
    context: CompressedContext


class Nugget2DModel(nn.Module):
    """Nugget2D on a LLaMA / Mistral / Qwen2 causal LM (see module docstring)."""

    def __init__(
        self,
        base_model: PreTrainedModel,
        config: Nugget2DConfig,
        peft_model: PeftModel | None = None,
    ) -> None:
        super().__init__()
        self.adaptor = get_causal_adaptor(base_model)
        config.check_depth(len(self.adaptor.layers(base_model)))
        self.config = config
        for p in base_model.parameters():
            p.requires_grad_(False)  # only adapters, scorer and soft prompt ever train
        self.peft = peft_model if peft_model is not None else attach_adapters(base_model, config)
        self.lm: PreTrainedModel = self.peft.get_base_model()
        self.router = AdapterRouter(self.peft)
        self.features = FrozenFeatures(self.peft, self.router, self.adaptor, config.scorer_layer)
        d = self.adaptor.hidden_size(self.lm)
        param = next(self.lm.parameters())
        self.scorer = NuggetScorer(d, config.scorer_config()).to(param.device, param.dtype)
        std = float(self.adaptor.embed_tokens(self.lm).weight.std())
        self.soft_prompt = nn.Parameter(
            torch.randn(config.soft_prompt_tokens, d, device=param.device, dtype=param.dtype) * std
        )
        self._selector = TopKSelector()

    @classmethod
    def from_lm(
        cls, name_or_path: str | Path, config: Nugget2DConfig | None = None, **hf_kwargs: Any
    ) -> Nugget2DModel:
        """Load the base LM with ``AutoModelForCausalLM.from_pretrained`` (a local folder,
        or a hub name for users with hub access) and attach fresh Nugget2D parts."""
        base = AutoModelForCausalLM.from_pretrained(str(name_or_path), **hf_kwargs)
        return cls(base, config or Nugget2DConfig())

    @property
    def dtype(self) -> torch.dtype:
        return self.soft_prompt.dtype

    def embed(self, input_ids: torch.Tensor) -> torch.Tensor:
        return self.adaptor.embed_tokens(self.lm)(input_ids)

    # --- scoring and selection ---------------------------------------------------

    def score(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        **feature_kwargs: Any,
    ) -> torch.Tensor:
        """Scorer logits ``[batch, n]`` (-inf at padding) from frozen layer-l features;
        with gradient to the scorer FFN only."""
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        features = self.features(input_ids, attention_mask, **feature_kwargs)
        return self.scorer.score(features.to(self.dtype), attention_mask)

    def select(
        self, scores: torch.Tensor, attention_mask: torch.Tensor, ratio: float | None = None
    ) -> torch.Tensor:
        """``[batch, n]`` bool: top ``ceil(r n)`` by detached score, always with the last
        real token (causal attention gives the others no view of it)."""
        lengths = attention_mask.ne(0).sum(dim=1)
        last = torch.zeros_like(attention_mask, dtype=torch.bool)
        last[torch.arange(len(lengths)), (lengths - 1).clamp(min=0)] = True
        forced = scores.detach().masked_fill(last, float("inf"))
        return self._selector(forced, attention_mask, ratio or self.config.ratio)

    # --- compressor mode -----------------------------------------------------------

    def compress(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        ratio: float | None = None,
        selected: torch.Tensor | None = None,
        adapter: str | None = COMPRESSOR,
    ) -> CompressedContext:
        """Encode documents ``[batch, n]`` (right-padded) with phi and keep the nuggets'
        KV at every layer. ``selected [batch, n]`` bool overrides the scorer's choice;
        ``adapter=None`` encodes with the plain base LM (baselines)."""
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        scores = self.score(input_ids, attention_mask)
        if selected is None:
            selected = self.select(scores, attention_mask, ratio)
        selected = selected & attention_mask.bool()
        cache = DynamicCache()
        with self.router.use(adapter):
            self.adaptor.backbone(self.lm)(
                input_ids=input_ids,
                attention_mask=attention_mask,
                past_key_values=cache,
                use_cache=True,
            )
        indices, mask = selection_to_indices(selected)
        return CompressedContext(
            kv=LayerKV.from_cache(cache).gather(indices),
            mask=mask,
            scores=gather_tokens(scores, indices, mask),
            positions=indices,
            lengths=attention_mask.ne(0).sum(dim=1),
        )

    def decoder_pass(
        self,
        context: CompressedContext,
        inputs_embeds: torch.Tensor,
        token_mask: torch.Tensor,
        adapter: str | None = DECODER,
    ) -> tuple[torch.Tensor, DynamicCache]:
        """Run theta on packed tokens ``[batch, m, d]`` attending to the nuggets and to
        themselves. Returns logits ``[batch, m, vocab]`` and the cache (nuggets + tokens)."""
        m = inputs_embeds.shape[1]
        visible = decoder_visibility(context.mask, token_mask)
        mask = float_mask(visible, key_bias(context, m, self.config.residual), self.dtype)
        cache = context.kv.to_cache()
        with self.router.use(adapter):
            out = self.lm(
                inputs_embeds=inputs_embeds,
                attention_mask=mask,
                position_ids=continuation_positions(context, token_mask),
                past_key_values=cache,
                use_cache=True,
            )
        return out.logits, cache

    def forward(
        self,
        doc_ids: torch.Tensor,
        doc_mask: torch.Tensor,
        prompt_ids: torch.Tensor | None,
        prompt_mask: torch.Tensor | None,
        answer_ids: torch.Tensor,
        answer_mask: torch.Tensor,
        soft_prompt: bool = False,
        ratio: float | None = None,
    ) -> Nugget2DOutput:
        """Paper eq. 7: ``-log p(answer | nuggets(doc), [soft prompt], prompt)``.

        All inputs are right-padded ``[batch, n_i]``; the decoder sequence is packed per
        row as ``[soft prompt] prompt answer`` so rows of different lengths line up.
        """
        context = self.compress(doc_ids, doc_mask, ratio=ratio)
        batch = doc_ids.shape[0]
        segments: list[tuple[torch.Tensor, torch.Tensor]] = []
        labels: list[torch.Tensor] = []
        if soft_prompt:
            soft = self.soft_prompt.expand(batch, -1, -1)
            ones = torch.ones(batch, soft.shape[1], dtype=torch.long, device=doc_ids.device)
            segments.append((soft, ones))
            labels.append(torch.full_like(ones, -100))
        if prompt_ids is not None and prompt_ids.shape[1] > 0:
            segments.append((self.embed(prompt_ids), prompt_mask))
            labels.append(torch.full_like(prompt_ids, -100))
        segments.append((self.embed(answer_ids), answer_mask))
        labels.append(answer_ids.masked_fill(answer_mask.eq(0), -100))
        order, token_mask = pack_segments(segments)
        embeds = gather_rows(torch.cat([s for s, _ in segments], dim=1), order)
        packed_labels = gather_rows(torch.cat(labels, dim=1), order).masked_fill(
            token_mask.eq(0), -100
        )
        logits, _ = self.decoder_pass(context, embeds, token_mask)
        loss = nn.functional.cross_entropy(
            logits[:, :-1].flatten(0, 1).float(), packed_labels[:, 1:].flatten(), ignore_index=-100
        )
        return Nugget2DOutput(loss, logits, packed_labels, context)
