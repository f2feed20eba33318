"""The training-task contract: :class:`TrainingTask`, every member the training code calls
on a task (modelled on torchtune's ``FTRecipeInterface``).

Who calls what:

- :mod:`stages.training.loop` (on every Ray Train worker): ``load_split``, ``build_model``,
  ``enable_activation_checkpointing`` (when the job sets ``activation_checkpointing``),
  ``find_unused_parameters``, ``parameter_counts``, ``collate``, ``loss``, ``n_tokens``,
  ``n_target_tokens``, ``logits`` and ``export``;
- :mod:`stages.training.engine`: only the ``loss`` function the loop hands it
  (``train_step(micro_batches, lr, task.loss)``), called as ``loss(wrapped_model, batch)``;
- :mod:`stages.training.launch`: pickles the task into ``train_loop_config`` (a task must be
  picklable: a dataclass of strings / config sections, caches created lazily per process);
- the training stages build tasks from config and upstream artifacts and call nothing else.

One task class per objective family (:mod:`.nugget_task`, :mod:`.baseline_task`,
:mod:`.nugget2d_task`, :mod:`.full_ft_task`, ...); where objectives of a family differ only
in data, a task holds a small per-objective strategy record instead of branching on the
objective's name. A task class implements every protocol member itself, so it reads top
to bottom: no task inherits methods from another class (torchtune's recipes forbid
implementation inheritance for the same reason). What several tasks share is a plain
function they call (:mod:`.task_steps`: parameter counts, export with the tokenizer,
seq2seq token counts; :mod:`.lm_task`, :mod:`.nugget2d_steps`, :mod:`.nugget_task`: one
family's steps), and at most a fields-only dataclass base keeps two constructors
identical. ``tests/training/test_task_protocol.py`` checks every task class against the
protocol with :func:`protocol_mismatches`, and that it inherits no method.

Optional: ``example_length(row) -> int`` (`LengthTask`: the loop sorts batches by it when
the job sets ``group_by_length``; `stages.training.launch.check_task` refuses the job before
the fit starts when the task does not define it, with `example_length_of`'s error), and
``mismatch(batch) -> Batch | None`` (`CompressedInputTask`, a task whose model reads a
compressed input: the loop's end-of-fit check of whether the model reads it,
`stages.training.input_use`).

Shapes: ``B`` = sequences in a batch, ``T`` = padded length, ``V`` = vocabulary.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import torch
from torch import nn

Batch = dict[str, torch.Tensor]  # what ``collate`` returns and the model's forward takes as **kwargs


@runtime_checkable
class TrainingTask(Protocol):
    """What the loop, the launcher and the engines use of a task."""

    find_unused_parameters: bool
    """Passed to DDP: True when some trainable parameters get no gradient in a step
    (e.g. a frozen adapter per objective, a scorer without learned selector)."""

    def load_split(self, split: str) -> list[Any]:
        """The examples of ``split`` ("train" or "dev"), tokenised, in a fixed order.

        Rows are opaque to the loop (it indexes and slices them and hands lists of them
        to ``collate``). Dev is cut to the task's ``dev_examples`` where set. Raises
        ``FileNotFoundError`` / ``ValueError`` for missing or empty data."""
        ...

    def build_model(self, init_dir: Path | None) -> nn.Module:
        """A fresh model (``init_dir`` None; seeded, identical on every rank) or the one
        ``export`` wrote to ``init_dir`` (resume). In train mode or not: the loop calls
        ``.train()``. Its ``forward(**batch)`` is what ``loss`` / ``logits`` call."""
        ...

    def collate(self, rows: list[Any], step: int, rank: int, train: bool) -> Batch:
        """A batch of ``rows``: tensors of shape ``[B, ...]`` (ids / masks ``[B, T]``).

        Must be a pure function of its arguments (``step`` is the global micro-step, -1
        for dev and the probe; ``rank`` the worker) so an exact resume sees the same
        batches; ``train`` enables training-only noise."""
        ...

    def loss(self, forward: Callable[..., Any], batch: Batch) -> torch.Tensor:
        """Scalar mean loss per target token of ``batch`` (0-dim float tensor with grad).

        ``forward`` is the model or its DDP / DeepSpeed wrapper, called once as
        ``forward(**batch)``."""
        ...

    def logits(self, model: nn.Module, batch: Batch) -> torch.Tensor:
        """Logits ``[B, T', V]`` of ``model`` (unwrapped, eval mode, no grad) on ``batch``:
        the probe saved with each checkpoint (``probe_logits.pt``) that a reload of the
        exported model must reproduce."""
        ...

    def n_target_tokens(self, batch: Batch) -> int:
        """Tokens the loss of ``batch`` averages over: the weight of the batch in the
        token-weighted dev loss."""
        ...

    def n_tokens(self, batch: Batch) -> int:
        """Tokens ``batch`` processes (inputs + targets, no padding): ``tokens_per_s``."""
        ...

    def parameter_counts(self, model: nn.Module) -> dict[str, int]:
        """``{"params.trainable": n, "params.frozen": n}``: MLflow params of the run."""
        ...

    def enable_activation_checkpointing(self, model: nn.Module) -> None:
        """Turn on activation checkpointing in ``model`` (``build_model``'s output) when
        the job sets ``activation_checkpointing``; a ``ValueError`` where the task cannot
        (`stages.training.task_steps.checkpointing_unsupported`)."""
        ...

    def export(self, model: nn.Module, directory: Path) -> None:
        """Write ``model`` (unwrapped) so ``build_model(directory)`` and the downstream
        loaders restore it exactly; ``directory`` does not exist yet. Rank 0 only."""
        ...


PROTOCOL_MEMBERS: tuple[str, ...] = (
    "find_unused_parameters", "load_split", "build_model", "collate", "loss", "logits",
    "n_target_tokens", "n_tokens", "parameter_counts", "enable_activation_checkpointing", "export",
)


@runtime_checkable
class LengthTask(Protocol):
    """The optional member of a task: the length of one of its rows (``group_by_length``)."""

    def example_length(self, row: Any) -> int:
        ...


def example_length_of(task: TrainingTask) -> Callable[[Any], int]:
    """``task.example_length``; a ``ValueError`` naming the setting to change when the task
    defines none (``group_by_length`` sorts batches by it)."""
    if not isinstance(task, LengthTask):
        raise ValueError(f"group_by_length: {type(task).__name__} defines no example_length (its rows have no "
                         "length to group by); set train.<job>.group_by_length=false for this stage")
    return task.example_length


@runtime_checkable
class CompressedInputTask(Protocol):
    """The optional member of a task whose model reads a compressed input (the encoder input of
    a Nugget / bottleneck / RE model, the history of a Nugget LM, the document of a Nugget2D
    compressor): ``batch`` (a ``collate`` output of at least two examples) with each example's
    compressed input taken from another example of the batch (a derangement) and everything
    else, its targets first, unchanged; None where the task's batches carry none (a Nugget LM
    without memory). A task without a compressed input (a plain LM, full fine-tuning, a
    bi-encoder ranking the batch's passages) does not define it."""

    def mismatch(self, batch: Batch) -> Batch | None:
        ...


@runtime_checkable
class PretrainedModel(Protocol):
    """A model saved by Hugging Face's ``save_pretrained`` (transformers and peft models,
    nugget_core's): what the tasks exporting that way build."""

    def save_pretrained(self, save_directory: str | Path, /) -> Any:
        ...


def as_pretrained(model: nn.Module) -> PretrainedModel:
    """``model`` (a task's ``build_model`` output, handed back by the loop) as the
    `PretrainedModel` it is; a ``TypeError`` for a module without ``save_pretrained``."""
    if not isinstance(model, PretrainedModel):
        raise TypeError(f"{type(model).__name__} has no save_pretrained: not a model this task builds")
    return model


def _parameters(fn: Any, drop_self: bool) -> list[str]:
    names = list(inspect.signature(fn).parameters)
    return names[1:] if drop_self and names and names[0] == "self" else names


def protocol_mismatches(cls: type) -> list[str]:
    """Members of :class:`TrainingTask` that ``cls`` lacks or defines with other parameter
    names (empty = ``cls`` satisfies the protocol). Static methods count as methods."""
    problems = []
    for name in PROTOCOL_MEMBERS:
        if not any(name in vars(k) or name in getattr(k, "__dataclass_fields__", {}) for k in cls.__mro__):
            problems.append(f"{cls.__name__}: missing {name}")
            continue
        expected = getattr(TrainingTask, name, None)
        if not callable(expected):
            continue
        raw = inspect.getattr_static(cls, name)
        is_static = isinstance(raw, staticmethod)
        got = _parameters(getattr(cls, name), drop_self=not is_static)
        want = _parameters(expected, drop_self=True)
        if got != want:
            problems.append(f"{cls.__name__}.{name}{tuple(got)}: protocol has {tuple(want)}")
    return problems
