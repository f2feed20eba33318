"""The two autoencoders of Nugget2D §4, built from nugget_core as stage ``train_nugget2d_ae``
builds them (`stages.nugget2d.autoencoding_task.AutoencodingTask`), and the LM under them.

- ``nugget2d``: `Nugget2DModel` (LoRA phi / theta, scorer, a one-token soft prompt) with the
  autoencoding objective: the document's nuggets (``ceil(r n)`` tokens' KV at every layer,
  always the last token) are all the decoder reads before writing the document back;
- ``icae``: `ICAEModel` (Ge et al., 2023) on the same parts with ``icae_slots(r, L)`` memory
  slots, ``L`` the longest document: Nugget2D's budget on it, fixed for every length.

Both reconstruct the document followed by EOS after the soft prompt (what lets decoding
stop), from the same LM weights and the same seed. Greedy decoding as stage
``eval_nugget2d_ae`` does it (`nugget_core.nugget2d.generate_from_context` with theta), to EOS
or the document's length plus a few tokens.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from benchmarks.headline.presets import Nugget2DPreset
from stages.common.device import to_device
from stages.common.padding import pad

if TYPE_CHECKING:
    from transformers import PreTrainedModel

    from nugget_core.nugget2d import CompressedContext

SYSTEMS = ("nugget2d", "icae")
Batch = dict[str, torch.Tensor]


def load_lm(gguf: str | None, lm_dir: str | None, keep_layers: int | None) -> tuple[PreTrainedModel, dict[str, Any]]:
    """The base LM in fp32 on the CPU, from SmolLM2's GGUF (dequantised by transformers: needs
    the ``gguf`` package) or an HF folder, and how long that took (what a GPU call's budget
    must leave for it)."""
    from transformers import AutoModelForCausalLM

    from nugget_core.nugget2d import load_gguf_model, truncate_layers

    t0 = time.monotonic()
    keep = keep_layers or None
    if gguf is not None:
        model = load_gguf_model(gguf, keep)
        source = f"GGUF {Path(gguf).name}, dequantised to fp32 by transformers"
    else:
        model = AutoModelForCausalLM.from_pretrained(str(lm_dir), dtype=torch.float32, trust_remote_code=False)
        if keep is not None:
            truncate_layers(model, keep)
        source = f"HF folder {lm_dir}"
    seconds = time.monotonic() - t0
    layers = int(model.config.num_hidden_layers)
    info = {"source": source, "load_seconds": round(seconds, 2), "layers": layers, "keep_layers": keep,
            "parameters": sum(p.numel() for p in model.parameters()), "vocab_size": int(model.config.vocab_size),
            "truncated": keep is not None}
    return model.eval(), info


def build_system(lm: PreTrainedModel, system: str, ratio: float, preset: Nugget2DPreset, seed: int) -> nn.Module:
    """A fresh ``system`` on a copy of ``lm`` (module docstring); the same seed gives both
    systems the same LoRA, scorer and soft-prompt initialisation."""
    from nugget_core.nugget2d import (
        ICAEModel,
        Nugget2DConfig,
        Nugget2DModel,
        icae_slots,
        set_objective,
    )

    if system not in SYSTEMS:
        raise ValueError(f"system {system!r}: expected one of {SYSTEMS}")
    torch.manual_seed(seed)
    config = Nugget2DConfig(ratio=ratio, scorer_layer=preset.scorer_layer, lora_rank=preset.lora_rank,
                            lora_alpha=preset.lora_alpha)
    model = Nugget2DModel(copy.deepcopy(lm), config)
    if system == "nugget2d":
        set_objective(model, "autoencoding")
        return model
    icae = ICAEModel(model, icae_slots(ratio, preset.max_doc_tokens))
    icae.trainable()
    return icae


def batch_of(docs: list[list[int]], eos: int, pad_id: int) -> Batch:
    """``doc_*`` (the documents) and ``target_*`` (the documents + EOS), right-padded, host memory."""
    doc_ids, doc_mask = pad(docs, pad_id)
    target_ids, target_mask = pad([[*d, eos] for d in docs], pad_id)
    return {"doc_ids": doc_ids, "doc_mask": doc_mask, "target_ids": target_ids, "target_mask": target_mask}


def tokens_of(batch: Batch) -> tuple[int, int]:
    """(document tokens, target tokens) of a `batch_of` batch."""
    return int(batch["doc_mask"].sum()), int(batch["target_mask"].sum())


def loss_of(model: nn.Module) -> Any:
    """``batch -> loss``: ``-log p(document + EOS | compressed document, soft prompt)``."""
    from nugget_core.nugget2d import ICAEModel, Nugget2DModel, autoencoding_loss

    if isinstance(model, ICAEModel):
        return lambda b: model(b["doc_ids"], b["doc_mask"], b["target_ids"], b["target_mask"]).loss
    if not isinstance(model, Nugget2DModel):
        raise TypeError(f"{type(model).__name__}: expected a Nugget2DModel or an ICAEModel")
    return lambda b: autoencoding_loss(model, b["doc_ids"], b["doc_mask"], b["target_ids"], b["target_mask"]).loss


def states_kept(system: str, ratio: float, doc_len: int, max_doc_tokens: int) -> int:
    """KV positions per layer the decoder reads for a document of ``doc_len`` tokens (Nugget2D:
    ``ceil(r n)``; ICAE: its slots, whatever the length)."""
    from nugget_core.nugget2d import icae_slots

    return icae_slots(ratio, max_doc_tokens) if system == "icae" else icae_slots(ratio, doc_len)


@torch.no_grad()
def reconstruct(model: nn.Module, docs: list[list[int]], batch_size: int, extra: int, eos: int, pad_id: int,
                device: torch.device) -> list[list[int]]:
    """Greedy reconstructions (token ids, EOS cut) of ``docs`` by a Nugget2D or ICAE ``model``,
    in input order; documents of similar length share a batch."""
    from nugget_core.nugget2d import DECODER, ICAEModel, Nugget2DModel, generate_from_context

    compress: Callable[[torch.Tensor, torch.Tensor], CompressedContext]
    if isinstance(model, ICAEModel):
        decoder, compress = model.nugget2d, model.compress
    elif isinstance(model, Nugget2DModel):
        decoder, ratio = model, model.config.ratio
        compress = lambda ids, mask: model.compress(ids, mask, ratio=ratio)  # noqa: E731
    else:
        raise TypeError(f"{type(model).__name__}: expected a Nugget2DModel or an ICAEModel")
    order = sorted(range(len(docs)), key=lambda i: len(docs[i]))
    out: list[list[int]] = [[] for _ in docs]
    for start in range(0, len(order), batch_size):
        chunk = order[start : start + batch_size]
        batch = to_device(batch_of([docs[i] for i in chunk], eos, pad_id), device)
        ids, mask = batch["doc_ids"], batch["doc_mask"]
        result = generate_from_context(decoder, compress(ids, mask), max_new_tokens=ids.shape[1] + extra,
                                       eos_token_id=eos, pad_token_id=pad_id, soft_prompt=True, adapter=DECODER)
        for i, row in zip(chunk, result.tokens.tolist(), strict=True):
            out[i] = row[: row.index(eos)] if eos in row else row
    return out
