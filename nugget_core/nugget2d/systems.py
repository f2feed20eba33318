"""The context each compressor-mode system reads, at one KV budget.

Every system answers "text after a document part" the same way: the document part becomes
a `CompressedContext` (per-layer KV the decoder attends to), and a decoder (an adapter, or
the plain base LM) reads the rest after it, with or without the soft prompt. Only the
context differs, so quality and cost differ only by what the decoder attends to. For ``n``
document tokens and a ratio ``r`` every system keeps ``k = ceil(r n)`` KV positions per
layer (`nuggets.nugget_counts`):

- ``nugget2d``: phi keeps the scorer's top ``k`` tokens; theta decodes (soft prompt when the
  model was trained with one);
- ``full``: the plain base LM reads only the most recent ``k`` tokens, as an LM given a text
  that starts there (positions from 0): a truncated context. ``ratio=None`` keeps every
  token, which is the plain LM on the whole document;
- ``nodoc``: the document part is dropped (no KV at all), the base LM reads the rest alone;
- a training-free press (``streaming_llm``, ``snapkv``, ``key_norm``): the base LM's KV of
  the document, ``k`` positions kept per layer and KV head (`presses.press_context`).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ..nuggets import nugget_counts
from .config import COMPRESSOR, DECODER
from .context import CompressedContext
from .kv import LayerKV
from .model import Nugget2DModel
from .presses import PRESSES, PressConfig, press_context

SYSTEMS = ("nugget2d", "full", "nodoc", *PRESSES)


@dataclass
class SystemContext:
    """What a system's decoder reads: the ``context``, the ``adapter`` it decodes with
    (None: the plain base LM) and whether the soft prompt comes first (``soft``)."""

    context: CompressedContext
    adapter: str | None
    soft: bool


def check_system(system: str) -> None:
    if system not in SYSTEMS:
        raise ValueError(f"system: unknown value {system!r}; use one of {SYSTEMS}")


def system_decoder(system: str, soft_prompt: bool) -> tuple[str | None, bool]:
    """``(adapter, soft)`` the decoder of ``system`` reads with: theta and the soft prompt
    (when ``soft_prompt``) for Nugget2D, the plain base LM for every baseline."""
    check_system(system)
    return (DECODER, soft_prompt) if system == "nugget2d" else (None, False)


def empty_context(model: Nugget2DModel, batch: int) -> CompressedContext:
    """A context of no positions for ``batch`` rows: what follows starts at position 0
    (attention over an empty cache is the plain forward). Its per-layer KV tensors are cut
    from a one-token pass, as the cache's shapes differ by LM family and config names do too."""
    device = model.device
    one = torch.ones(1, 1, dtype=torch.long, device=device)
    probe = model.encode_kv(one, one, None).slice(0, 0)
    zeros = torch.zeros(batch, 0, dtype=torch.long, device=device)
    return CompressedContext(
        kv=LayerKV([k.expand(batch, -1, -1, -1) for k in probe.keys],
                   [v.expand(batch, -1, -1, -1) for v in probe.values]),
        mask=zeros,
        scores=torch.zeros(batch, 0, device=device, dtype=model.dtype),
        positions=zeros,
        lengths=torch.zeros(batch, dtype=torch.long, device=device),
    )


def most_recent(input_ids: torch.Tensor, attention_mask: torch.Tensor, counts: torch.Tensor,
                pad_id: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """The last ``counts[b]`` real tokens of each right-padded row, right-padded again:
    ``ids [batch, max(counts)]`` and their ``mask``."""
    lengths = attention_mask.ne(0).sum(dim=1)
    width = int(counts.max())
    slots = torch.arange(width, device=input_ids.device)[None, :]
    index = (lengths - counts)[:, None] + slots
    mask = (slots < counts[:, None]).long()
    ids = torch.gather(input_ids, 1, index.clamp(max=input_ids.shape[1] - 1))
    return ids.masked_fill(mask.eq(0), pad_id), mask


def system_context(
    model: Nugget2DModel,
    system: str,
    doc_ids: torch.Tensor,
    doc_mask: torch.Tensor,
    ratio: float | None,
    press_config: PressConfig | None = None,
    soft_prompt: bool = False,
) -> SystemContext:
    """The context of ``system`` (module docstring) for right-padded documents
    ``doc_ids [batch, n]``, every row with at least one token. ``ratio=None`` is allowed
    for ``full`` only (every token kept); ``soft_prompt``: whether Nugget2D's decoder reads
    the soft prompt first (the baselines never do)."""
    check_system(system)
    if system == "nodoc":
        return SystemContext(empty_context(model, doc_ids.shape[0]), None, False)
    if bool((doc_mask.ne(0).sum(dim=1) == 0).any()):
        raise ValueError(f"system_context({system!r}): a document row has no tokens; "
                         "use empty_context for rows with nothing to compress")
    if ratio is None:
        if system != "full":
            raise ValueError(f"system {system!r} needs the ratio of its KV budget (ratio=None is full's whole context)")
        return SystemContext(model.encode_full(doc_ids, doc_mask), None, False)
    if system == "full":
        ids, mask = most_recent(doc_ids, doc_mask, nugget_counts(doc_mask, ratio))
        return SystemContext(model.encode_full(ids, mask), None, False)
    adapter, soft = system_decoder(system, soft_prompt)
    if system == "nugget2d":
        return SystemContext(model.compress(doc_ids, doc_mask, ratio=ratio, adapter=COMPRESSOR), adapter, soft)
    return SystemContext(press_context(model, doc_ids, doc_mask, ratio, system, press_config), adapter, soft)
