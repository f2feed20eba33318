"""Greedy generation from a compressed context (compressor mode) and KV accounting.

The decoder first reads ``[soft prompt] prompt`` in one pass (`Nugget2DModel.decoder_pass`),
then appends one token per step to the same HF cache; a key mask tracks which cached
columns are real (prompts of different lengths leave padding columns behind).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from .bias import nugget_attention_mask
from .config import DECODER
from .context import CompressedContext, gather_rows, pack_segments
from .kv import cache_nbytes
from .model import Nugget2DModel


@dataclass
class GenerationResult:
    """``tokens [batch, new]`` (``pad_token_id`` after EOS), the KV bytes of the context
    before decoding and of the whole cache at the end, and positions per layer."""

    tokens: torch.Tensor
    context_kv_bytes: int
    final_kv_bytes: int
    final_kv_positions: int


@torch.no_grad()
def generate_from_context(
    model: Nugget2DModel,
    context: CompressedContext,
    prompt_ids: torch.Tensor | None = None,
    prompt_mask: torch.Tensor | None = None,
    max_new_tokens: int = 32,
    eos_token_id: int | None = None,
    pad_token_id: int = 0,
    soft_prompt: bool = False,
    adapter: str | None = DECODER,
) -> GenerationResult:
    """Greedy decoding with theta (or ``adapter``) from ``context`` and right-padded prompts."""
    batch = context.lengths.shape[0]
    device = context.lengths.device
    segments = []
    if soft_prompt:
        soft = model.soft_prompt.expand(batch, -1, -1)
        segments.append((soft, torch.ones(batch, soft.shape[1], dtype=torch.long, device=device)))
    if prompt_ids is not None and prompt_ids.shape[1] > 0:
        if prompt_mask is None:
            prompt_mask = torch.ones_like(prompt_ids)
        segments.append((model.embed(prompt_ids), prompt_mask))
    if not segments:
        raise ValueError("generation needs a prompt or the soft prompt to start from")
    order, token_mask = pack_segments(segments)
    embeds = gather_rows(torch.cat([s for s, _ in segments], dim=1), order)
    logits, cache = model.decoder_pass(context, embeds, token_mask, adapter=adapter)
    n_real = token_mask.sum(dim=1)
    last = logits[torch.arange(batch), n_real - 1]
    keys_real = torch.cat([context.mask.bool(), token_mask.bool()], dim=1)
    positions = context.lengths + n_real
    finished = torch.zeros(batch, dtype=torch.bool, device=device)
    out: list[torch.Tensor] = []
    for step in range(max_new_tokens):
        token = last.argmax(dim=-1).masked_fill(finished, pad_token_id)
        out.append(token)
        if eos_token_id is not None:
            finished |= token.eq(eos_token_id)
        if bool(finished.all()) or step == max_new_tokens - 1:
            break
        keys_real = torch.cat([keys_real, torch.ones(batch, 1, dtype=torch.bool, device=device)], 1)
        key_scores = context.key_scores(keys_real.shape[1] - context.mask.shape[1])
        mask = nugget_attention_mask(
            keys_real[:, None, :], model.dtype, key_scores, model.config.residual
        )
        step_out = model.lm_forward(
            adapter,
            inputs_embeds=model.embed(token[:, None]),
            attention_mask=mask,
            position_ids=(positions + step)[:, None],
            past_key_values=cache,
            use_cache=True,
        )
        last = step_out.logits[:, -1]
    return GenerationResult(
        tokens=torch.stack(out, dim=1),
        context_kv_bytes=context.nbytes(),
        final_kv_bytes=cache_nbytes(cache),
        final_kv_positions=cache.get_seq_length(),
    )
