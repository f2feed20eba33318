"""Steps several training tasks share, as plain functions each task calls from its own
`stages.training.task.TrainingTask` members (no task inherits them: a task class reads top
to bottom, and binds a shared step by name, ``loss = staticmethod(model_loss)``): the loss
and logits of a model whose forward returns them, tokenizer loading, the dev cut, parameter
counts, the refusal of activation checkpointing, seq2seq token counts, the
``save_pretrained`` export and the derangement of a batch's compressed inputs
(`stages.training.task.CompressedInputTask`).

Shapes: ``B`` = sequences in a batch, ``T`` = padded length.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import torch
from torch import nn

from stages.training.task import Batch, as_pretrained

IGNORE = -100  # the label of a position the loss skips (HF's ignore_index)
Row = TypeVar("Row")


def model_loss(forward: Callable[..., Any], batch: Batch) -> torch.Tensor:
    """The loss of a forward that returns it (``.loss``: HF models and the tasks' wrappers)."""
    return forward(**batch).loss


def model_logits(model: nn.Module, batch: Batch) -> torch.Tensor:
    """The logits of a model whose forward returns them (``.logits``), for the probe."""
    return model(**batch).logits


def load_tokenizer(path: str) -> Any:
    """The HF tokenizer saved in ``path`` (tasks load it once per process, lazily: a task
    is pickled to every worker without it)."""
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(path, trust_remote_code=False)


def keep_dev(rows: list[Row], split: str, dev_examples: int) -> list[Row]:
    """``rows``, cut to the first ``dev_examples`` on the dev split (0 = all)."""
    return rows[:dev_examples] if split == "dev" and dev_examples else rows


def trainable_and_frozen(model: nn.Module) -> dict[str, int]:
    """``{"params.trainable": n, "params.frozen": n}`` of ``model`` (a task's ``parameter_counts``)."""
    from nugget_core import count_parameters

    counts = count_parameters(model)
    return {"params.trainable": counts.trainable, "params.frozen": counts.total - counts.trainable}


def checkpointing_unsupported(task: object) -> ValueError:
    """The error of ``enable_activation_checkpointing`` on a task whose model has none to turn on."""
    return ValueError(f"{type(task).__name__} does not support activation_checkpointing")


def labelled_tokens(batch: Batch) -> int:
    """Target tokens of a batch with ``labels [B, T]``: those the loss reads (not ``IGNORE``)."""
    return int((batch["labels"] != IGNORE).sum())


def seq2seq_tokens(batch: Batch) -> int:
    """Tokens an encoder-decoder batch processes: the encoder's (``attention_mask [B, T]``)
    plus the labelled ones."""
    return int(batch["attention_mask"].sum()) + labelled_tokens(batch)


def export_pretrained(model: nn.Module, directory: str | Path, tokenizer: Callable[[], Any]) -> None:
    """``model.save_pretrained`` and the task's ``tokenizer()`` beside it: a folder loadable
    outside Ray (a module that is not a pretrained model fails before the tokenizer loads)."""
    as_pretrained(model).save_pretrained(directory)
    tokenizer().save_pretrained(directory)


ENCODER_INPUT = ("input_ids", "attention_mask", "boundary_mask")  # an encoder-decoder batch's encoder side


def derange(batch: Batch, keys: tuple[str, ...]) -> Batch:
    """``batch`` with the tensors ``keys`` (those it has; each ``[B, ...]``) of example ``b``
    taken from example ``(b - B // 2) mod B``, every other tensor the same object: each example
    gets another's, half the batch away (collated neighbours can be neighbouring windows of one
    document, sharing text). A ``ValueError`` for a batch of fewer than two examples or without
    any of ``keys``."""
    present = [k for k in keys if k in batch]
    if not present:
        raise ValueError(f"derange: the batch has none of {keys} (it has {sorted(batch)})")
    size = batch[present[0]].shape[0]
    if size < 2:
        raise ValueError(f"derange: a batch of {size} example(s) has no other example to take an input from")
    return {k: v.roll(size // 2, dims=0) if k in present else v for k, v in batch.items()}


def mismatch_encoder_input(batch: Batch) -> Batch:
    """An encoder-decoder batch (``input_ids`` / ``attention_mask`` / ``boundary_mask`` ``[B, T]``,
    ``labels``) whose examples each read another example's encoder input: the
    `CompressedInputTask.mismatch` of every task whose model compresses what its encoder reads."""
    return derange(batch, ENCODER_INPUT)
