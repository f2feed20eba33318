"""What the Nugget2D training tasks share (`stages.nugget2d.nugget2d_task`'s compressor,
autoregressive and LM-baseline tasks, `stages.nugget2d.autoencoding_task`): the constructor
fields they all start with (`Nugget2DTaskFields`), the module their ``build_model``
returns (`Nugget2DModule`), and the steps as plain functions each task calls from its own
`stages.training.task.TrainingTask` members: building or loading the `Nugget2DModel`, the
rows of a split, the export, and the batches of build_lm's LM segments (autoregressive
model and LM baselines).

Shapes: ``B`` = sequences in a batch, ``T`` = padded length.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow.parquet as pq
import torch
from torch import nn

from stages.common.padding import pad
from stages.nugget2d.artifacts import LMRecords
from stages.training.task import Batch
from stages.training.task_steps import derange, keep_dev

if TYPE_CHECKING:
    from nugget_core.nugget2d import ICAEModel, Nugget2DConfig, Nugget2DModel, Nugget2DUsage


@dataclass
class Nugget2DTaskFields:
    """The constructor fields every Nugget2D task starts with, in this order (fields only:
    the steps are this module's functions, which read them)."""

    data: LMRecords  # build_lm's output
    base_dir: str  # prepare_lm's HF folder (weights + tokenizer)
    nugget2d: Any  # stages.config.schema.Nugget2DSection
    attn_implementation: str = "sdpa"
    dev_examples: int = 0
    seed: int = 0
    init_dir: str | None = None  # a saved Nugget2D to start from (fine-tuning a trained compressor)


class Nugget2DModule(nn.Module):
    """What a Nugget2D task's ``build_model`` returns: the model it trains as ``.model`` (a
    `Nugget2DModel`, or an `ICAEModel` on one), its ``forward`` one objective's loss."""

    model: Nugget2DModel | ICAEModel


def inner_model(model: nn.Module) -> Nugget2DModel | ICAEModel:
    """The model a Nugget2D task trains inside ``model`` (its ``build_model`` output,
    handed back by the loop); a ``TypeError`` for any other module."""
    if not isinstance(model, Nugget2DModule):
        raise TypeError(f"{type(model).__name__}: not a Nugget2D task's model (a Nugget2DModule)")
    return model.model


def nugget2d_of(model: nn.Module) -> Nugget2DModel:
    """The `Nugget2DModel` inside ``model`` (an ICAE's: the one under its memory slots)."""
    from nugget_core.nugget2d import ICAEModel

    inner = inner_model(model)
    return inner.nugget2d if isinstance(inner, ICAEModel) else inner


def model_config(task: Nugget2DTaskFields) -> Nugget2DConfig:
    """The task's ``nugget2d`` section as a `Nugget2DConfig` (the section has all its fields)."""
    from dataclasses import asdict

    from nugget_core.nugget2d import Nugget2DConfig

    return Nugget2DConfig(**asdict(task.nugget2d))


def fresh_nugget2d(task: Nugget2DTaskFields) -> Nugget2DModel:
    """A new `Nugget2DModel` on the task's base LM (LoRA, scorer and soft prompt drawn from
    torch's generator: seed it first)."""
    from nugget_core.nugget2d import Nugget2DModel

    return Nugget2DModel.from_lm(task.base_dir, model_config(task), attn_implementation=task.attn_implementation)


def saved_or_fresh(task: Nugget2DTaskFields, init_dir: Path | None,
                   fresh: Callable[[], Nugget2DModel] | None = None) -> Nugget2DModel:
    """The saved model (a resume's ``init_dir`` wins over the task's), else ``fresh()``
    (default `fresh_nugget2d`) after seeding torch with the task's seed, so every rank
    starts from the same weights."""
    from nugget_core.nugget2d import load_nugget2d

    saved = init_dir if init_dir is not None else task.init_dir
    if saved is not None:
        return load_nugget2d(saved, task.base_dir, attn_implementation=task.attn_implementation)
    torch.manual_seed(task.seed)  # LoRA, scorer and soft prompt initialisation
    return fresh() if fresh is not None else fresh_nugget2d(task)


def split_rows(task: Nugget2DTaskFields, rows: list[dict[str, Any]], split: str) -> list[dict[str, Any]]:
    """A task's ``load_split``: ``rows`` cut to its ``dev_examples`` on dev; a
    ``ValueError`` naming the task and its data when none are left."""
    rows = keep_dev(rows, split, task.dev_examples)
    if not rows:
        raise ValueError(f"{type(task).__name__}: split {split!r} of {task.data.path} has no rows")
    return rows


def parquet_rows(path: Path, split: str) -> list[dict[str, Any]]:
    """The rows of ``path`` (a build_lm parquet file with a ``split`` column) in ``split``."""
    return [r for r in pq.read_table(path).to_pylist() if r["split"] == split]


def export_nugget2d(model: nn.Module, directory: Path, usage: Nugget2DUsage, tokenizer: Callable[[], Any]) -> None:
    """``save_nugget2d`` (peft adapters + scorer + soft prompt + config + ``usage``) of the
    `Nugget2DModel` in ``model``, and the task's ``tokenizer()``. The base LM reference is written where
    the model lands in the stage output (a path relative to the final folder:
    `stages.training.model_card`)."""
    from nugget_core.nugget2d import save_nugget2d

    save_nugget2d(nugget2d_of(model), directory, usage=usage)
    tokenizer().save_pretrained(directory)


# build_lm's LM segments: predict the recent tokens after the distant ones


def segment_rows(data: LMRecords, lm_corpus: str, split: str) -> list[dict[str, Any]]:
    """``{"ids": distant + recent, "predict": len(recent)}`` of ``lm_<lm_corpus>.parquet``;
    segments whose recent part is shorter than the longest are dropped (one ``predict``
    per batch)."""
    rows = parquet_rows(data.segments(lm_corpus), split)
    width = max((len(r["recent"]) for r in rows), default=0)
    return [{"ids": r["distant"] + r["recent"], "predict": width} for r in rows if len(r["recent"]) == width]


def collate_segments(rows: list[dict[str, Any]], pad_id: int) -> Batch:
    """``input_ids [B, T]`` and ``predict_last [1]`` (tokens at the end to predict)."""
    ids, _ = pad([r["ids"] for r in rows], pad_id)
    return {"input_ids": ids, "predict_last": torch.tensor([rows[0]["predict"]], device="cpu")}


def segment_target_tokens(batch: Batch) -> int:
    """The predicted tokens of a `collate_segments` batch."""
    return int(batch["predict_last"][0]) * batch["input_ids"].shape[0]


def segment_tokens(batch: Batch) -> int:
    """Tokens of a `collate_segments` batch: every position of ``input_ids``."""
    return batch["input_ids"].numel()


def mismatch_distant(batch: Batch) -> Batch:
    """A `collate_segments` batch whose segments each read another segment's distant tokens (all
    but the last ``predict_last``: what the autoregressive model compresses into nuggets and its
    baselines read whole or pooled) before their own recent tokens, the predicted ones unchanged."""
    ids = batch["input_ids"]
    cut = ids.shape[1] - int(batch["predict_last"][0])
    distant = derange({"input_ids": ids[:, :cut]}, ("input_ids",))["input_ids"]
    return {**batch, "input_ids": torch.cat([distant, ids[:, cut:]], dim=1)}
