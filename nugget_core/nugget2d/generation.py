"""Greedy generation from a compressed context (compressor mode) and KV accounting.

The decoder reads ``[soft prompt] prompt`` in one pass, then one token per step, with
the decoding adapter merged into the weights (`AdapterRouter.merged`) on a static cache
(`static_decode.StaticDecoder`; a CUDA graph per step on GPUs). Prompts of different
lengths are packed per row (real tokens first); a key mask keeps padding columns out.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from .config import DECODER
from .context import CompressedContext, gather_rows, pack_segments
from .model import Nugget2DModel
from .static_decode import StaticDecoder


@dataclass
class GenerationResult:
    """``tokens [batch, new]`` (``pad_token_id`` after EOS), the KV bytes of the context
    before decoding and of the states held at the end (context, prompt and every
    generated token but the last), and those positions per layer."""

    tokens: torch.Tensor
    context_kv_bytes: int
    final_kv_bytes: int
    final_kv_positions: int


def pack_prompt(
    model: Nugget2DModel,
    batch: int,
    prompt_ids: torch.Tensor | None,
    prompt_mask: torch.Tensor | None,
    soft_prompt: bool,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The decoder's first input ``[soft prompt] prompt`` packed per row (real tokens
    first): embeddings ``[batch, m, d]`` and mask ``[batch, m]``."""
    device = model.device
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
    return gather_rows(torch.cat([s for s, _ in segments], dim=1), order), token_mask


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
    cuda_graph: bool | None = None,
    consume_context: bool = False,
) -> GenerationResult:
    """Greedy decoding with theta (or ``adapter``; None = the plain LM) from ``context``
    and right-padded prompts ``[batch, p]``.

    ``cuda_graph`` (default: on when the model is on a CUDA device) replays each step
    from a captured graph; the tokens do not depend on it. ``consume_context`` frees the
    context's KV while copying it into the decoder's cache (``context.kv`` is emptied).
    """
    batch = context.lengths.shape[0]
    device = context.lengths.device
    if cuda_graph is None:
        cuda_graph = device.type == "cuda"
    elif cuda_graph and device.type != "cuda":
        raise ValueError(f"cuda_graph=True needs the context on a CUDA device, not {device}")
    embeds, token_mask = pack_prompt(model, batch, prompt_ids, prompt_mask, soft_prompt)
    context_positions, context_bytes = context.kv.length, context.nbytes()
    with model.merged_adapter(adapter):
        decoder = StaticDecoder(
            model.lm, context, token_mask, max_new_tokens, model.config.residual, consume_context,
            model.residual_scale,
        )
        tokens = decoder.generate(embeds, max_new_tokens, eos_token_id, pad_token_id, cuda_graph)
    positions = context_positions + token_mask.shape[1] + tokens.shape[1] - 1
    per_position = context_bytes // max(context_positions, 1)
    return GenerationResult(
        tokens=tokens,
        context_kv_bytes=context_bytes,
        final_kv_bytes=per_position * positions,
        final_kv_positions=positions,
    )
