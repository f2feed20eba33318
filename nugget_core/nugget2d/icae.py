"""ICAE-style fixed memory slots (Ge et al., 2023), the baseline of Nugget2D's
autoencoding experiment (Nugget2D §4, fig. 5), built from a `Nugget2DModel`'s parts so
that both train "the same way" (same LM, LoRA phi / theta, soft prompt, objective, data).

ICAE appends ``slots`` learned memory embeddings to the document; the encoder (the LM
with phi) reads ``document ; memory`` and the memory's last-layer hidden states are the
compressed text. The decoder (the LM with theta) reads them as input embeddings, so it
encodes them again at every layer before reading ``[soft prompt] target`` (Nugget2D §4:
"ICAE needs to encode their memory tokens into hidden states during decoding"). Here
that re-encoding is the first decoder pass: its per-layer KV becomes a
`CompressedContext` of ``slots`` positions (0 .. slots - 1; the target continues after
them, scores 0), so ICAE decodes and trains through the same code as Nugget2D
(`Nugget2DModel.answer_loss`, `generate_from_context`). The slot count is fixed, whatever
the document's length: the property the paper's comparison is about. The scorer is unused.

Saved as a Nugget2D model plus ``icae_memory.safetensors`` (`save_icae` / `load_icae`).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file, save_file
from torch import nn
from transformers import PreTrainedModel

from ..checkpoint import BaseModelReference, require_model_folder
from .config import COMPRESSOR, DECODER
from .context import CompressedContext, gather_rows, pack_segments
from .model import Nugget2DModel, Nugget2DOutput
from .persistence import load_nugget2d, save_nugget2d

MEMORY_NAME = "icae_memory.safetensors"


def icae_slots(ratio: float, max_doc_tokens: int) -> int:
    """ICAE's fixed memory at ``ratio``: the ``ceil(ratio * max_doc_tokens)`` nuggets Nugget2D
    keeps of the longest training document (the budget both systems are compared at)."""
    return max(math.ceil(ratio * max_doc_tokens - 1e-9), 1)


class ICAEModel(nn.Module):
    """Memory slots on a `Nugget2DModel` (module docstring). ``nugget2d`` holds the LM,
    the adapters phi / theta and the soft prompt; ``memory [slots, d]`` is ICAE's own."""

    def __init__(self, nugget2d: Nugget2DModel, slots: int) -> None:
        super().__init__()
        if slots < 1:
            raise ValueError(f"ICAE needs at least one memory slot, got slots={slots}")
        self.nugget2d = nugget2d
        self.memory = nn.Parameter(nugget2d.random_embeddings(slots))  # initialised as the soft prompt

    @property
    def slots(self) -> int:
        return int(self.memory.shape[0])

    def compress(self, doc_ids: torch.Tensor, doc_mask: torch.Tensor) -> CompressedContext:
        """The memory of right-padded documents ``[batch, n]``: phi reads each row's
        tokens followed directly by the slots; theta re-encodes the slots' last hidden
        states at positions ``0 .. slots - 1``."""
        model, batch = self.nugget2d, doc_ids.shape[0]
        device = doc_ids.device
        ones = torch.ones(batch, self.slots, dtype=torch.long, device=device)
        memory = self.memory.expand(batch, -1, -1)
        order, mask = pack_segments([(doc_ids, doc_mask), (ones, ones)])  # only the masks are read
        embeds = gather_rows(torch.cat([model.embed(doc_ids), memory], dim=1), order)
        hidden = model.backbone_forward(COMPRESSOR, inputs_embeds=embeds, attention_mask=mask,
                                        use_cache=False).last_hidden_state
        lengths = doc_mask.ne(0).sum(dim=1)
        at = lengths[:, None] + torch.arange(self.slots, device=device)  # the slots follow the real tokens
        states = gather_rows(hidden, at)
        kv = model.encode_kv(None, ones, DECODER, inputs_embeds=states)
        return CompressedContext(
            kv=kv,
            mask=ones,
            scores=torch.zeros(batch, self.slots, dtype=model.dtype, device=device),
            positions=torch.arange(self.slots, device=device).expand(batch, -1),
            lengths=torch.full((batch,), self.slots, dtype=torch.long, device=device),
        )

    def forward(
        self, doc_ids: torch.Tensor, doc_mask: torch.Tensor, target_ids: torch.Tensor, target_mask: torch.Tensor
    ) -> Nugget2DOutput:
        """``-log p(target | memory(doc), soft prompt)``: autoencoding when the target is
        the document (plus EOS, as the reconstruction study trains it)."""
        return self.nugget2d.answer_loss(self.compress(doc_ids, doc_mask), None, None, target_ids, target_mask,
                                         soft_prompt=True)

    def trainable(self) -> list[nn.Parameter]:
        """ICAE trains phi, theta, the soft prompt and the memory; the scorer is unused
        and frozen (every other base-LM weight is frozen by `Nugget2DModel`)."""
        from .objectives import set_objective

        set_objective(self.nugget2d, "autoencoding")
        self.nugget2d.scorer.requires_grad_(False)
        self.memory.requires_grad_(True)
        return [p for p in self.parameters() if p.requires_grad]


def save_icae(model: ICAEModel, directory: str | Path, base_model: BaseModelReference | None = None) -> Path:
    """`save_nugget2d` of the shared parts (``base_model``: where the base LM is) plus the
    memory slots."""
    directory = save_nugget2d(model.nugget2d, directory, base_model)
    save_file({"memory": model.memory.detach().contiguous()}, str(directory / MEMORY_NAME))
    return directory


def load_icae(
    directory: str | Path, base_model: PreTrainedModel | str | Path | None = None,
    base_within: str | Path | None = None, **hf_kwargs: Any
) -> ICAEModel:
    """Rebuild a saved `ICAEModel` on ``base_model`` (a loaded LM, a folder / hub name to
    load, or None: the base LM the folder records, inside ``base_within``: `load_nugget2d`)."""
    directory = require_model_folder(directory, MEMORY_NAME, "ICAE")
    if not (directory / MEMORY_NAME).is_file():
        raise FileNotFoundError(f"{directory} holds no {MEMORY_NAME}: not an ICAE model (a Nugget2D one loads "
                                "with load_nugget2d)")
    memory = load_file(str(directory / MEMORY_NAME))["memory"]
    model = ICAEModel(load_nugget2d(directory, base_model, base_within, **hf_kwargs), slots=memory.shape[0])
    with torch.no_grad():
        model.memory.copy_(memory)
    return model
