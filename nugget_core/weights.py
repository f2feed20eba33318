"""Saving a module's weights as one safetensors file, whatever storage they live in.

``safetensors.torch.save_model`` drops the duplicate names of tied weights (mBART-50 and
T5 tie the shared embedding, both embed_tokens and the LM head) by keeping the one name
whose tensor covers its whole storage. Under DeepSpeed ZeRO-2 with bf16 every parameter
is a view into one flat buffer, so no tied name covers its storage and ``save_model``
raises "found no suitable name to keep" (the paper rehearsal's train_baselines on the
tied mBART-50, `docs/rehearsal.md`). `save_weights` keeps the first name of each tied
group itself and writes a copy of every tensor; ``safetensors.torch.load_model`` loads
the file back, re-tying the dropped names from the module's own ties.
"""

from __future__ import annotations

from pathlib import Path

from safetensors.torch import save_file
from torch import nn


def save_weights(module: nn.Module, path: str | Path) -> None:
    """Every tensor of ``module.state_dict()`` into ``path``, tied names once (the first)."""
    kept: dict[tuple[int, int, tuple[int, ...], tuple[int, ...]], str] = {}
    tensors = {}
    for name, tensor in module.state_dict().items():
        tie = (tensor.untyped_storage().data_ptr(), tensor.storage_offset(), tuple(tensor.shape), tensor.stride())
        if tie in kept:
            continue  # the same weight under another name: load_model re-ties it
        kept[tie] = name
        tensors[name] = tensor.detach().clone().contiguous()  # its own storage, not a view of a flat buffer
    save_file(tensors, str(path), metadata={"format": "pt"})
