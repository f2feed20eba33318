"""Prompt-based systems of the QA and summarisation evaluations (Nugget2D §6).

Every system answers ``document part + prompt`` with greedy decoding through the same
code path, `generate_from_context`, so that quality and cost differ only by what the
decoder attends to:

- ``full``: the base LM (no adapter) attends to every token of the document part;
- ``nodoc``: the same with the document left out of the prompt;
- ``nugget2d``: the document part is compressed by phi to ``ceil(r n)`` nuggets and
  theta decodes (with the soft prompt when the checkpoint was trained with one);
- ``lmsumm``: the base LM first summarises the document with the appendix-C LMSumm
  prompt, then answers like ``full`` with the summary in the document's place;
- a training-free KV press (``streaming_llm``, ``snapkv``, ``key_norm``): the base LM's
  document KV, pressed to Nugget2D's budget at the same ratio per layer and KV head
  (`nugget_core.nugget2d.presses`), decoded by the base LM.

Prompts are laid out by a `nugget_core.nugget2d.prompts.PromptFormat` (appendix C's
``[INST] ... [/INST]`` or the LM's chat template) and cut where the document ends, so
Full and Nugget2D read the same tokens. Examples are decoded in right-padded batches;
costs are per example (see `stages.nugget2d.lm.cost`), with time per decoding step of the
batch.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from logging import Logger
from typing import TYPE_CHECKING, Any

import torch

from nugget_core.nugget2d.prompts import PromptFormat, encode, encode_parts
from stages.common.device import synchronize, to_device
from stages.common.padding import pad
from stages.evaluation.decoding import decode_ids
from stages.nugget2d.lm.cost import DecodeCost

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase

    from nugget_core.nugget2d import Nugget2DModel, PressConfig
    from nugget_core.nugget2d.generation import GenerationResult
    from nugget_core.nugget2d.systems import SystemContext


@dataclass
class Generation:
    text: str
    tokens: list[int]  # generated ids, EOS excluded
    context_states: int  # KV positions per layer kept for the document part
    cost: DecodeCost


@torch.no_grad()
def eos_and_pad(tokenizer: PreTrainedTokenizerBase) -> tuple[int | None, int]:
    eos = tokenizer.eos_token_id
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else (eos or 0)
    return eos, int(pad)


@torch.no_grad()
def decode(model: Nugget2DModel, read: SystemContext, prompt_ids: torch.Tensor, prompt_mask: torch.Tensor,
           max_new_tokens: int, eos: int | None, pad_id: int) -> GenerationResult:
    """Greedy decoding of ``prompt_ids [batch, m]`` after a system's document context ``read``
    (`nugget_core.nugget2d.system_context`), as every prompted evaluation decodes; eval_efficiency
    times this very call (``eos`` None: exactly ``max_new_tokens`` tokens)."""
    from nugget_core.nugget2d import generate_from_context

    return generate_from_context(
        model, read.context, prompt_ids, prompt_mask, max_new_tokens=max_new_tokens,
        eos_token_id=eos, pad_token_id=pad_id, soft_prompt=read.soft, adapter=read.adapter,
    )


@torch.no_grad()
def generate_batch(
    model: Nugget2DModel,
    tokenizer: PreTrainedTokenizerBase,
    docs: Sequence[Sequence[int]],
    prompts: Sequence[Sequence[int]],
    *,
    ratio: float | None,
    max_new_tokens: int,
    soft_prompt: bool = False,
    extra_encode_ms: Sequence[float] | None = None,
    press: str | None = None,
    press_config: PressConfig | None = None,
) -> list[Generation]:
    """Greedy answers of one batch. ``ratio=None``: Full (base LM, every document
    token); else Nugget2D compression at ``ratio`` decoded by theta, or with ``press``
    the base LM's KV pressed to the same budget (``press_config``: a `PressConfig`)."""
    from nugget_core.nugget2d import system_context

    if press is not None and ratio is None:
        raise ValueError(f"press {press!r} needs the ratio of the budget it keeps")
    eos, pad_id = eos_and_pad(tokenizer)
    device = model.device
    doc_ids, doc_mask = to_device(pad(docs, pad_id), device)
    start = time.perf_counter()
    # Full here reads every document token (ratio None); the others keep ceil(r n) positions
    system = "full" if ratio is None else press or "nugget2d"
    read = system_context(model, system, doc_ids, doc_mask, ratio, press_config, soft_prompt)
    context, soft = read.context, read.soft
    synchronize(device)
    encoded = time.perf_counter()
    prompt_ids, prompt_mask = to_device(pad(prompts, pad_id), device)
    result = decode(model, read, prompt_ids, prompt_mask, max_new_tokens, eos, pad_id)
    synchronize(device)
    decoded = time.perf_counter()
    batch, steps = result.tokens.shape
    bytes_per_position = result.final_kv_bytes / (batch * result.final_kv_positions)
    ms_step = 1000 * (decoded - encoded) / steps
    out = []
    for b in range(batch):
        row = result.tokens[b].tolist()
        n = row.index(eos) + 1 if eos is not None and eos in row else len(row)
        kept = int(context.counts[b])
        seen = kept + int(prompt_mask[b].sum()) + (model.soft_prompt.shape[0] if soft else 0)
        # token i (0-based) is predicted by a query seeing seen + i positions
        cost = DecodeCost(
            generated_tokens=n,
            attended_states=seen + (n - 1) / 2,
            kv_bytes=bytes_per_position * (seen + n - 1),
            ms_per_token=ms_step,
            encode_ms=1000 * (encoded - start) / batch + (extra_encode_ms[b] if extra_encode_ms else 0.0),
        )
        tokens = row[: n - 1] if eos is not None and row[n - 1] == eos else row[:n]
        text = decode_ids(tokenizer, tokens, skip_special_tokens=True).strip()
        out.append(Generation(text, tokens, kept, cost))
    return out


def fed_texts(tokenizer: PreTrainedTokenizerBase, docs: Sequence[Sequence[int]],
              prompts: Sequence[Sequence[int]]) -> list[dict[str, str]]:
    """Per example, the text of the ids a system was fed: ``context`` (the document part,
    as cut to the document limit; what Nugget2D compresses and a press prunes) and
    ``prompt`` (what follows it), special tokens kept, so a sample shows the prompt as read."""
    return [{"context": decode_ids(tokenizer, d), "prompt": decode_ids(tokenizer, p)}
            for d, p in zip(docs, prompts, strict=True)]


@dataclass
class Summary:
    text: str
    tokens: int  # summary length in subwords (EOS excluded)
    ms: float  # per example: the whole summarisation (its encode + decode)


@torch.no_grad()
def lmsumm_batch(
    model: Nugget2DModel, tokenizer: PreTrainedTokenizerBase, documents: Sequence[str], fmt: PromptFormat, *,
    ratio: float,
    max_new_tokens: int, doc_limit: int = 0,
) -> list[Summary]:
    """LMSumm's first step: the base LM summarises each document into ~``ratio`` of its
    words with the appendix-C prompt (Full decoding of ``... $TEXT`` + the turn's end)."""
    from stages.nugget2d.lm_builders import lmsumm_instruction

    texts = [decode_ids(tokenizer, ids) for ids in encode(tokenizer, documents, doc_limit)]
    parts = [fmt.parts(t, before=lmsumm_instruction(t, ratio)) for t in texts]
    start = time.perf_counter()
    gens = generate_batch(
        model, tokenizer, *encode_parts(tokenizer, parts), ratio=None, max_new_tokens=max_new_tokens,
    )
    per_example = 1000 * (time.perf_counter() - start) / len(texts)
    return [Summary(g.text, len(g.tokens), per_example) for g in gens]


def run_batches(
    label: str, model: Nugget2DModel, tokenizer: PreTrainedTokenizerBase, docs: Sequence[Sequence[int]],
    prompts: Sequence[Sequence[int]], batch_size: int, log: Logger, **kwargs: Any,
) -> list[Generation]:
    """`generate_batch` over consecutive batches, logging progress and rate."""
    out: list[Generation] = []
    start = time.perf_counter()
    extra = kwargs.pop("extra_encode_ms", None)
    for i in range(0, len(docs), batch_size):
        out += generate_batch(
            model, tokenizer, docs[i : i + batch_size], prompts[i : i + batch_size],
            extra_encode_ms=extra[i : i + batch_size] if extra else None, **kwargs,
        )
        tokens = sum(g.cost.generated_tokens for g in out)
        log.info("%s: %d/%d examples, %.1f generated tokens/s", label, len(out), len(docs),
                 tokens / (time.perf_counter() - start))
    return out
