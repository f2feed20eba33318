"""One vector per text from an RE encoder (`nugget_core.restorable.RestorableEncoder`): what the
evaluations that read the embeddings themselves (retrieval, the table 10 probe) share."""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from stages.common.device import to_device
from stages.common.padding import pad
from stages.common.records import batches

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase

    from nugget_core.restorable import RestorableEncoder


@torch.no_grad()
def embed(tower: RestorableEncoder, tokenizer: PreTrainedTokenizerBase, texts: list[str], max_tokens: int,
          batch_size: int, device: torch.device | str) -> torch.Tensor:
    """``[len(texts), d]`` vectors of ``texts`` by one encoder (on ``device``, fp32), each text cut to
    ``max_tokens`` tokens."""
    out = []
    for chunk in batches(texts, batch_size):
        ids, mask = pad(tokenizer(chunk, truncation=True, max_length=max_tokens)["input_ids"], tokenizer.pad_token_id)
        out.append(tower(*to_device((ids, mask), device)).float())
    return torch.cat(out)
