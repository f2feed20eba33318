"""The reference greedy decoder of a compressed context: slow, simple, independent.

`nugget_core.nugget2d.generation.generate_from_context` (static cache, merged adapter,
CUDA graphs) must produce exactly these tokens; this is the loop it replaced, kept as
the oracle of the equivalence tests and the decode benchmark. The decoder first reads
``[soft prompt] prompt`` in one pass (`Nugget2DModel.decoder_pass`), then appends one
token per step to a `DynamicCache`, rebuilding the 4D float mask every step, with the
adapter computed by peft's LoRA layers (unmerged).
"""

from __future__ import annotations

import torch

from ..typed_access import logits_of
from .config import DECODER
from .context import CompressedContext
from .generation import GenerationResult, pack_prompt
from .kv import cache_nbytes
from .model import Nugget2DModel


@torch.no_grad()
def reference_generate_from_context(
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
    """Greedy decoding with theta (or ``adapter``) from ``context`` and right-padded prompts
    (same arguments and result as `generate_from_context`)."""
    batch = context.lengths.shape[0]
    device = context.lengths.device
    embeds, token_mask = pack_prompt(model, batch, prompt_ids, prompt_mask, soft_prompt)
    logits, cache = model.decoder_pass(context, embeds, token_mask, adapter=adapter)
    n_real = token_mask.sum(dim=1)
    last = logits[torch.arange(batch, device=device), n_real - 1]
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
        mask = model.attention_mask(keys_real[:, None, :], key_scores)
        step_out = model.lm_forward(
            adapter,
            inputs_embeds=model.embed(token[:, None]),
            attention_mask=mask,
            position_ids=(positions + step)[:, None],
            past_key_values=cache,
            use_cache=True,
        )
        last = logits_of(step_out)[:, -1]
    return GenerationResult(
        tokens=torch.stack(out, dim=1),
        context_kv_bytes=context.nbytes(),
        final_kv_bytes=cache_nbytes(cache),
        final_kv_positions=cache.get_seq_length(),
    )
