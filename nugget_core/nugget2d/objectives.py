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


def autoencoding_loss(
    model: Nugget2DModel, doc_ids: torch.Tensor, doc_mask: torch.Tensor
) -> Nugget2DOutput:
    """Reconstruct the document from its nuggets after the soft prompt."""
    return model(doc_ids, doc_mask, None, None, doc_ids, doc_mask, soft_prompt=True)


def continuation_loss(
    model: Nugget2DModel,
    doc_ids: torch.Tensor,
    doc_mask: torch.Tensor,
    prompt_ids: torch.Tensor,
    prompt_mask: torch.Tensor,
    answer_ids: torch.Tensor,
    answer_mask: torch.Tensor,
) -> Nugget2DOutput:
    """Continue text: three consecutive chunks serve as document, prompt and answer."""
    return model(
        doc_ids, doc_mask, prompt_ids, prompt_mask, answer_ids, answer_mask, soft_prompt=True
    )


def finetune_loss(
    model: Nugget2DModel,
    doc_ids: torch.Tensor,
    doc_mask: torch.Tensor,
    prompt_ids: torch.Tensor,
    prompt_mask: torch.Tensor,
    answer_ids: torch.Tensor,
    answer_mask: torch.Tensor,
) -> Nugget2DOutput:
    """Task fine-tuning (QA, summarisation): answer the prompt from the nuggets."""
    return model(
        doc_ids, doc_mask, prompt_ids, prompt_mask, answer_ids, answer_mask, soft_prompt=False
    )


def objective_loss(
    model: Nugget2DModel, objective: Objective | str, batch: dict[str, torch.Tensor]
) -> Nugget2DOutput:
    """Dispatch on ``objective`` with a batch dict of ``doc_ids``/``doc_mask`` and, except
    for autoencoding, ``prompt_ids``/``prompt_mask``/``answer_ids``/``answer_mask``."""
    objective = Objective(objective)
    if objective is Objective.AUTOENCODING:
        return autoencoding_loss(model, batch["doc_ids"], batch["doc_mask"])
    fn = continuation_loss if objective is Objective.CONTINUATION else finetune_loss
    return fn(
        model,
        batch["doc_ids"],
        batch["doc_mask"],
        batch["prompt_ids"],
        batch["prompt_mask"],
        batch["answer_ids"],
        batch["answer_mask"],
    )
