"""The three compressor-mode objectives of the paper (2.4) and what each trains.

================  =========  ========  ======  ===========
objective         phi        theta     scorer  soft prompt
================  =========  ========  ======  ===========
autoencoding      trained    trained   trained trained (decoder input: soft + doc)
continuation      trained    frozen    trained trained (doc | prompt | answer chunks)
finetune          trained    trained   trained unused
================  =========  ========  ======  ===========

The base LM's own weights are always frozen (LoRA only).
"""

from __future__ import annotations

from enum import StrEnum

import torch

from .adapters import adapter_parameters
from .config import COMPRESSOR, DECODER
from .model import Nugget2DModel, Nugget2DOutput


class Objective(StrEnum):
    AUTOENCODING = "autoencoding"
    CONTINUATION = "continuation"
    FINETUNE = "finetune"


def set_objective(model: Nugget2DModel, objective: Objective | str) -> list[torch.nn.Parameter]:
    """Set ``requires_grad`` for ``objective``; returns the trainable parameters."""
    objective = Objective(objective)
    trainable = {
        COMPRESSOR: True,
        DECODER: objective is not Objective.CONTINUATION,
    }
    for name, flag in trainable.items():
        for p in adapter_parameters(model.peft, name):
            p.requires_grad_(flag)
    for p in model.scorer.parameters():
        p.requires_grad_(True)
    model.soft_prompt.requires_grad_(objective is not Objective.FINETUNE)
    return [p for p in model.parameters() if p.requires_grad]


#: The batch keys of the three-chunk objectives: ``<chunk>_ids`` / ``<chunk>_mask``.
CHUNKS = ("doc", "prompt", "answer")


def autoencoding_loss(
    model: Nugget2DModel, doc_ids: torch.Tensor, doc_mask: torch.Tensor
) -> Nugget2DOutput:
    """Reconstruct the document ``doc_ids [batch, n]`` from its nuggets after the soft
    prompt."""
    return model(doc_ids, doc_mask, None, None, doc_ids, doc_mask, soft_prompt=True)


def objective_loss(
    model: Nugget2DModel, objective: Objective | str, batch: dict[str, torch.Tensor]
) -> Nugget2DOutput:
    """The loss of ``objective`` on a batch of right-padded ``doc_ids`` / ``doc_mask``
    ``[batch, n_doc]`` and, except for autoencoding, ``prompt_*`` / ``answer_*``.

    continuation: three consecutive chunks serve as document, prompt and answer, after
    the soft prompt; finetune (QA, summarisation): answer the prompt from the nuggets,
    no soft prompt. Returns `Nugget2DOutput` (``loss``: mean NLL of the answer tokens).
    """
    objective = Objective(objective)
    if objective is Objective.AUTOENCODING:
        return autoencoding_loss(model, batch["doc_ids"], batch["doc_mask"])
    chunks = [batch[f"{chunk}_{part}"] for chunk in CHUNKS for part in ("ids", "mask")]
    return model(*chunks, soft_prompt=objective is Objective.CONTINUATION)


def continuation_loss(model: Nugget2DModel, batch: dict[str, torch.Tensor]) -> Nugget2DOutput:
    """``objective_loss(model, "continuation", batch)``."""
    return objective_loss(model, Objective.CONTINUATION, batch)


def finetune_loss(model: Nugget2DModel, batch: dict[str, torch.Tensor]) -> Nugget2DOutput:
    """``objective_loss(model, "finetune", batch)``."""
    return objective_loss(model, Objective.FINETUNE, batch)
