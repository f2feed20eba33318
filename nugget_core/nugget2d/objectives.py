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
    model: Nugget2DModel, doc_ids: torch.Tensor, doc_mask: torch.Tensor,
    target_ids: torch.Tensor | None = None, target_mask: torch.Tensor | None = None,
) -> Nugget2DOutput:
    """Reconstruct ``target_ids [batch, m]`` (default: the document ``doc_ids [batch, n]``
    itself) from the document's nuggets after the soft prompt. A target other than the
    document asks how much the nuggets say about it: another document's nuggets, say, tell
    whether the model reads them at all."""
    if (target_ids is None) != (target_mask is None):
        raise ValueError("autoencoding_loss: give both target_ids and target_mask, or neither")
    if target_ids is None or target_mask is None:
        target_ids, target_mask = doc_ids, doc_mask
    return model(doc_ids, doc_mask, None, None, target_ids, target_mask, soft_prompt=True)


def objective_loss(
    model: Nugget2DModel, objective: Objective | str, batch: dict[str, torch.Tensor]
) -> Nugget2DOutput:
    """The loss of ``objective`` on a batch of right-padded ``doc_ids`` / ``doc_mask``
    ``[batch, n_doc]`` and, except for autoencoding, ``prompt_*`` / ``answer_*``
    (autoencoding: optionally ``target_*``, what to reconstruct, `autoencoding_loss`).

    continuation: three consecutive chunks serve as document, prompt and answer, after
    the soft prompt; finetune (QA, summarisation): answer the prompt from the nuggets,
    no soft prompt. Returns `Nugget2DOutput` (``loss``: mean NLL of the answer tokens).
    """
    objective = Objective(objective)
    if objective is Objective.AUTOENCODING:  # the batch's ``target_*`` where it has them, else the document
        return autoencoding_loss(model, batch["doc_ids"], batch["doc_mask"], batch.get("target_ids"),
                                 batch.get("target_mask"))
    chunks = [batch[f"{chunk}_{part}"] for chunk in CHUNKS for part in ("ids", "mask")]
    return model(*chunks, soft_prompt=objective is Objective.CONTINUATION)


def continuation_loss(model: Nugget2DModel, batch: dict[str, torch.Tensor]) -> Nugget2DOutput:
    """``objective_loss(model, "continuation", batch)``."""
    return objective_loss(model, Objective.CONTINUATION, batch)


def finetune_loss(model: Nugget2DModel, batch: dict[str, torch.Tensor]) -> Nugget2DOutput:
    """``objective_loss(model, "finetune", batch)``."""
    return objective_loss(model, Objective.FINETUNE, batch)
