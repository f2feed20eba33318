"""Decoding cost side by side (eval_efficiency): Full, Nugget2D and the presses on one context.

Nugget2D's premise (abstract: "drastically reducing the overhead during decoding in terms of
time and space") is that a step reading ``ceil(r n)`` positions of KV costs less than one
reading all ``n``. What is measured, per context length and system, in one process, on the same
document tokens and prompt, through the decoding every prompted evaluation runs
(`stages.nugget2d.lm.prompted.decode`: `generate_from_context` on a static cache):

- the document pass (``prefill_ms``): the base LM's pass (Full, a press, which then prunes) or
  the compression (Nugget2D), `system_context`;
- time per generated token (``ms``): per repeat, a decode of ``warmup`` tokens subtracted from
  one of ``warmup + steps`` (EOS off, so both generate exactly that many), over ``steps``: the
  prompt's prefill, the cache's setup and the adapter merge cancel out, what is left is the
  steady-state step. Repeats are interleaved across systems (repeat i of every system runs
  back to back), so drift on the machine hits all systems alike and repeat i pairs them;
- bytes: the document's KV as tensors hold it (``context_kv_bytes``), and the static cache a
  timed step reads (``cache_bytes``: every slot, k + prompt + generated; the masked ones too,
  since the attention reads the whole cache);
- the bound: a step reads the LM's weights once plus the cache, so it cannot take less than
  (weights + cache) / bandwidth (`stages.common.bandwidth`), measured at the stage's start.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch

from nugget_core.typed_access import checked
from stages.common.device import synchronize
from stages.common.progress import progress_logger
from stages.nugget2d.lm import prompted

if TYPE_CHECKING:
    from nugget_core.nugget2d import Nugget2DModel, PressConfig
    from nugget_core.nugget2d.generation import GenerationResult
    from nugget_core.nugget2d.systems import SystemContext

log = progress_logger("nugget.eval_efficiency")


@dataclass(frozen=True)
class DecodeSystem:
    """A system of the comparison: ``name`` (``full``, ``nugget2d`` or a press) at KV budget
    ``ratio`` (None: Full, every document token)."""

    name: str
    ratio: float | None = None

    @property
    def label(self) -> str:
        return self.name if self.ratio is None else f"{self.name}_{self.ratio:g}"


def decode_systems(ratios: Sequence[float], presses: Sequence[str]) -> list[DecodeSystem]:
    """Full, Nugget2D at each ratio, then each press at each ratio (the same KV budget)."""
    return [DecodeSystem("full"), *[DecodeSystem("nugget2d", r) for r in ratios],
            *[DecodeSystem(p, r) for p in presses for r in ratios]]


@dataclass
class DecodeCost:
    """One system at one context length (module docstring)."""

    system: DecodeSystem
    context: int  # document tokens
    prompt: int  # prompt tokens (with the soft prompt where the system reads it)
    kept: int  # document KV positions per layer
    ms: list[float]  # per repeat: ms per generated token
    prefill_ms: list[float]  # per timed document pass
    context_kv_bytes: int
    cache_bytes: int  # the static cache one timed step reads
    weight_bytes: int  # the weights one step reads

    @property
    def read_bytes(self) -> int:
        return self.weight_bytes + self.cache_bytes

    @property
    def mean_ms(self) -> float:
        return sum(self.ms) / len(self.ms)


def step_weight_bytes(model: Nugget2DModel) -> int:
    """Bytes of the weights one decoding step reads: every base-LM parameter once (a tied
    embedding once, as the output layer), no LoRA factor (the adapter is merged into the
    weights), no input embedding of its own (a lookup reads one row)."""
    lm = model.lm
    embedding = checked(lm.get_input_embeddings().weight, torch.Tensor, "the input embedding's weight")
    output = lm.get_output_embeddings()
    tied = output is not None and checked(output.weight, torch.Tensor, "the output layer's weight").data_ptr() \
        == embedding.data_ptr()
    seen: set[int] = set()
    total = 0
    for name, p in lm.named_parameters():
        if "lora_" in name or (p is embedding and not tied) or p.data_ptr() in seen:
            continue
        seen.add(p.data_ptr())
        total += p.numel() * p.element_size()
    return total


def _decode_seconds(model: Nugget2DModel, read: SystemContext, prompt: torch.Tensor, tokens: int, pad_id: int
                    ) -> tuple[float, GenerationResult]:
    mask = torch.ones_like(prompt)
    synchronize(model.device)
    start = time.perf_counter()
    result = prompted.decode(model, read, prompt, mask, tokens, None, pad_id)
    synchronize(model.device)
    return time.perf_counter() - start, result


@torch.no_grad()
def measure_context(
    model: Nugget2DModel,
    doc_ids: torch.Tensor,
    prompt_ids: torch.Tensor,
    systems: Sequence[DecodeSystem],
    *,
    warmup: int,
    steps: int,
    repeats: int,
    prefill_repeats: int = 1,
    press_config: PressConfig | None = None,
    soft_prompt: bool = False,
    pad_id: int = 0,
) -> list[DecodeCost]:
    """Every system of ``systems`` on one document ``doc_ids [1, n]`` and prompt ``prompt_ids
    [1, m]`` (module docstring); in ``systems``' order."""
    from nugget_core.nugget2d import system_context

    if doc_ids.shape[0] != 1 or prompt_ids.shape[0] != 1:
        raise ValueError("measure_context: one document and one prompt (batch 1)")
    device = model.device
    doc_ids, prompt_ids = doc_ids.to(device), prompt_ids.to(device)
    doc_mask = torch.ones_like(doc_ids)
    weights = step_weight_bytes(model)
    reads: dict[str, SystemContext] = {}
    costs: dict[str, DecodeCost] = {}
    for s in systems:
        prefill = []
        for _ in range(prefill_repeats):
            reads.pop(s.label, None)  # the previous pass's KV is not held through the next
            synchronize(device)
            start = time.perf_counter()
            read = system_context(model, s.name, doc_ids, doc_mask, s.ratio, press_config, soft_prompt)
            synchronize(device)
            prefill.append(1000 * (time.perf_counter() - start))
            reads[s.label] = read
        read = reads[s.label]
        _, result = _decode_seconds(model, read, prompt_ids, warmup + steps, pad_id)  # untimed: sizes, warm caches
        kept = read.context.kv.length
        per_position = result.context_kv_bytes // max(kept, 1)
        costs[s.label] = DecodeCost(
            s, int(doc_ids.shape[1]), result.final_kv_positions + 1 - kept - warmup - steps, kept, [], prefill,
            result.context_kv_bytes, per_position * (result.final_kv_positions + 1), weights)
    for i in range(repeats):
        for s in systems:
            short, _ = _decode_seconds(model, reads[s.label], prompt_ids, warmup, pad_id)
            long, _ = _decode_seconds(model, reads[s.label], prompt_ids, warmup + steps, pad_id)
            # unclamped: at a few tokens noise can make one difference negative, and the mean needs it as it is
            costs[s.label].ms.append(1000 * (long - short) / steps)
        if (i + 1) % max(1, repeats // 4) == 0 or i + 1 == repeats:
            log.info("eval_efficiency: context %d, repeat %d/%d: %s", doc_ids.shape[1], i + 1, repeats,
                     ", ".join(f"{c.system.label} {c.mean_ms:.1f} ms/token" for c in costs.values()))
    return [costs[s.label] for s in systems]
