"""Steps several training tasks share, as plain functions each task calls from its own
`stages.training.task.TrainingTask` members (no task inherits them: a task class reads top
to bottom, and binds a shared step by name, ``loss = staticmethod(model_loss)``): the loss
and logits of a model whose forward returns them, tokenizer loading, the dev cut, parameter
counts, the refusal of activation checkpointing, seq2seq token counts and the
``save_pretrained`` export.

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
