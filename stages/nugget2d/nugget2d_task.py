"""The Nugget2D training tasks: :class:`Nugget2DCompressorTask` (compressor objectives),
:class:`Nugget2DARTask` (the autoregressive LM) and :class:`LMBaselineTask`. Each
implements every member of :class:`stages.training.task.TrainingTask` itself, calling the
steps the Nugget2D tasks share (`stages.nugget2d.nugget2d_steps`: model building, rows,
export, LM-segment batches); they share only their first constructor fields
(`Nugget2DTaskFields`).

Compressor objectives (paper §2.4; trainable parts per ``nugget_core.nugget2d.set_objective``,
losses ``nugget_core.nugget2d.objective_loss``); they differ only in data, held by a
:class:`CompressorObjective` record:

- ``autoencoding``: reconstruct a document from its nuggets (``continuation.parquet``'s
  ``doc`` chunks);
- ``continuation``: doc / prompt / answer = consecutive chunks (``continuation.parquet``);
- ``finetune``: answer a task prompt from the nuggets of its document (``qa.jsonl`` or
  ``summarization.jsonl``, cut and tokenised as the evaluations do, answer + EOS),
  optionally starting from a trained compressor (``init_dir``).

Autoregressive (§2.5): the parallel training approximation on full-length LM segments
(``lm_pile.parquet`` / ``lm_wiki.parquet``): predict the recent tokens. As in the paper the
scorer can come frozen from the compressor (``scorer_dir``) with nuggets above a calibrated
Lambda (``threshold``); without them a ratio r of each batch's tokens become nuggets.
:class:`LMBaselineTask` trains the Full and Compressive baselines on the same segments.

The model handed to the engine is :class:`CompressorModule` / :class:`AutoregressiveModule`,
whose ``forward(**batch)`` computes the loss, so DDP / DeepSpeed see one ordinary module
call per micro-batch; ``.model`` is the ``Nugget2DModel``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from stages.common.padding import pad
from stages.nugget2d.lm_task import pad_id, task_examples
from stages.nugget2d.nugget2d_steps import (
    Nugget2DModule,
    Nugget2DTaskFields,
    collate_segments,
    export_nugget2d,
    fresh_nugget2d,
    mismatch_distant,
    nugget2d_of,
    parquet_rows,
    saved_or_fresh,
    segment_rows,
    segment_target_tokens,
    segment_tokens,
    split_rows,
)
from stages.training.task import Batch
from stages.training.task_steps import (
    derange,
    load_tokenizer,
    model_logits,
    model_loss,
    trainable_and_frozen,
)

if TYPE_CHECKING:
    from nugget_core.nugget2d import Nugget2DModel, Nugget2DUsage

CHUNKS = ("doc", "prompt", "answer")


@dataclass(frozen=True)
class CompressorObjective:
    """What distinguishes the compressor objectives in training: data and batch layout."""

    name: str  # a nugget_core.nugget2d.Objective value
    chunks: tuple[str, ...]  # the batch holds <chunk>_ids / <chunk>_mask [B, T_chunk] for each
    target: str  # what the loss predicts: <target>_ids / <target>_mask (its mask counts the target tokens)
    task_records: bool  # rows from build_lm's <finetune_task>.jsonl; else continuation.parquet
    # the target is the document, held apart as target_ids / target_mask (the same tensors as doc_*):
    # a mismatched batch (`mismatch`) gives the document another's nuggets and keeps its target
    reconstructs: bool = False


COMPRESSOR_OBJECTIVES: dict[str, CompressorObjective] = {
    "autoencoding": CompressorObjective("autoencoding", ("doc",), target="target", task_records=False,
                                        reconstructs=True),
    "continuation": CompressorObjective("continuation", CHUNKS, target="answer", task_records=False),
    "finetune": CompressorObjective("finetune", CHUNKS, target="answer", task_records=True),
}


class CompressorModule(Nugget2DModule):
    """``forward(**batch)`` -> ``Nugget2DOutput`` (``.loss``, ``.logits``) of one compressor
    objective (``nugget_core.nugget2d.objective_loss``)."""

    model: Nugget2DModel

    def __init__(self, model: Nugget2DModel, objective: str) -> None:
        super().__init__()
        self.model, self.objective = model, objective

    def forward(self, **batch: torch.Tensor) -> Any:
        from nugget_core.nugget2d import objective_loss

        return objective_loss(self.model, self.objective, batch)


class AutoregressiveModule(Nugget2DModule):
    """``forward(input_ids [B, T], predict_last [1])`` -> ``nugget_core.nugget2d.ar_loss``'s
    `AROutput`: ``.loss`` (mean NLL of the last ``predict_last`` tokens) and ``.logits
    [B, T, V]`` of the parallel approximation.

    Nuggets are the tokens scoring above ``threshold`` (the calibrated Lambda); with
    ``threshold`` None, above the in-batch ``(1 - r)`` quantile of the scores."""

    model: Nugget2DModel

    def __init__(self, model: Nugget2DModel, threshold: float | None = None) -> None:
        super().__init__()
        self.model, self.threshold = model, threshold

    def forward(self, input_ids: torch.Tensor, predict_last: torch.Tensor) -> Any:
        from nugget_core.nugget2d import ar_loss

        # no calibrated Lambda: a ratio r of the batch's tokens become nuggets
        ratio = self.model.config.ratio if self.threshold is None else None
        return ar_loss(self.model, input_ids, int(predict_last[0]), threshold=self.threshold, ratio=ratio)


@dataclass
class Nugget2DCompressorTask(Nugget2DTaskFields):
    """Compressor objectives autoencoding / continuation / finetune (stages ``train_nugget2d``
    and ``train_nugget2d_ft``)."""

    objective: str = "continuation"  # a key of COMPRESSOR_OBJECTIVES
    finetune_task: str = "qa"  # finetune: build_lm's qa or summarization records
    max_doc_tokens: int = 0  # finetune: document-part tokens kept (0 = all)
    prompt_format: str = "inst"  # finetune: nugget_core.nugget2d.prompts.PROMPT_FORMATS
    find_unused_parameters: bool = field(default=True, init=False)  # frozen adapter / scorer
    _tok: Any = field(default=None, init=False, repr=False)  # loaded once per process

    def __post_init__(self) -> None:
        if self.objective not in COMPRESSOR_OBJECTIVES:
            raise ValueError(f"Nugget2D compressor objective {self.objective!r}: expected one of "
                             f"{sorted(COMPRESSOR_OBJECTIVES)} (autoregressive: Nugget2DARTask)")

    @property
    def spec(self) -> CompressorObjective:
        return COMPRESSOR_OBJECTIVES[self.objective]

    def tokenizer(self) -> Any:
        if self._tok is None:
            self._tok = load_tokenizer(self.base_dir)
        return self._tok

    def usage(self) -> Nugget2DUsage:
        """How the trained model reads its inputs, saved beside it: the soft prompt before
        the prompt except when fine-tuned, which reads its task's prompt format."""
        from nugget_core.nugget2d import Nugget2DUsage

        if self.objective != "finetune":
            return Nugget2DUsage(objective=self.objective, soft_prompt=True)
        return Nugget2DUsage(objective=self.objective, soft_prompt=False, finetune_task=self.finetune_task,
                             prompt_format=self.prompt_format)

    def load_split(self, split: str) -> list[dict[str, Any]]:
        if self.spec.task_records:
            rows = task_examples(self.data, self.tokenizer(), self.finetune_task, split, self.max_doc_tokens,
                                 self.prompt_format)
        else:
            rows = parquet_rows(self.data.continuation(), split)
        return split_rows(self, rows, split)

    def build_model(self, init_dir: Path | None) -> nn.Module:
        from nugget_core.nugget2d import set_objective

        model = saved_or_fresh(self, init_dir)
        set_objective(model, self.spec.name)
        return CompressorModule(model, self.spec.name)

    def enable_activation_checkpointing(self, model: nn.Module) -> None:
        nugget2d_of(model).enable_activation_checkpointing()  # the routing-aware one (Nugget2DModel)

    def collate(self, rows: list[dict[str, Any]], step: int, rank: int, train: bool) -> Batch:
        """``<chunk>_ids`` / ``<chunk>_mask`` ``[B, T_chunk]`` (right-padded) per chunk; autoencoding
        also ``target_ids`` / ``target_mask``, the document to reconstruct."""
        batch = {}
        for chunk in self.spec.chunks:
            ids, mask = pad([r[chunk] for r in rows], pad_id(self.tokenizer()))
            batch[f"{chunk}_ids"], batch[f"{chunk}_mask"] = ids, mask
        if self.spec.reconstructs:
            batch["target_ids"], batch["target_mask"] = batch["doc_ids"], batch["doc_mask"]
        return batch

    @staticmethod
    def mismatch(batch: Batch) -> Batch:
        """Each example's nuggets from another example's document; prompt and answer (or the
        reconstruction target) its own."""
        return derange(batch, ("doc_ids", "doc_mask"))

    loss = staticmethod(model_loss)
    logits = staticmethod(model_logits)

    def n_target_tokens(self, batch: Batch) -> int:
        return int(batch[f"{self.spec.target}_mask"].sum())

    def n_tokens(self, batch: Batch) -> int:
        return sum(int(batch[f"{chunk}_mask"].sum()) for chunk in self.spec.chunks)

    parameter_counts = staticmethod(trainable_and_frozen)

    def export(self, model: nn.Module, directory: Path) -> None:
        export_nugget2d(model, directory, self.usage(), self.tokenizer)


@dataclass
class Nugget2DARTask(Nugget2DTaskFields):
    """The autoregressive LM (stage ``train_nugget2d_ar``), on build_lm's LM segments."""

    lm_corpus: str = "pile"  # build_lm's lm_<corpus>.parquet
    scorer_dir: str | None = None  # a saved Nugget2D whose scorer is copied in and frozen
    threshold: float | None = None  # the calibrated Lambda (None: in-batch (1 - r) quantile)
    find_unused_parameters: bool = field(default=True, init=False)  # frozen adapter / scorer
    _tok: Any = field(default=None, init=False, repr=False)  # loaded once per process

    def tokenizer(self) -> Any:
        if self._tok is None:
            self._tok = load_tokenizer(self.base_dir)
        return self._tok

    def usage(self) -> Nugget2DUsage:
        from nugget_core.nugget2d import Nugget2DUsage

        return Nugget2DUsage(objective="autoregressive", soft_prompt=False)  # plain text, no soft prompt

    def load_split(self, split: str) -> list[dict[str, Any]]:
        return split_rows(self, segment_rows(self.data, self.lm_corpus, split), split)

    def fresh_model(self) -> Nugget2DModel:
        """A new model, with the compressor's scorer copied in when ``scorer_dir`` is set."""
        from nugget_core.nugget2d import load_scorer

        model = fresh_nugget2d(self)
        if self.scorer_dir is not None:
            load_scorer(model, self.scorer_dir)
        return model

    def build_model(self, init_dir: Path | None) -> nn.Module:
        model = saved_or_fresh(self, init_dir, self.fresh_model)
        if self.scorer_dir is not None:  # paper §2.5: the reused scorer "is not optimized"
            model.scorer.requires_grad_(False)
        # the checkpoint carries its Lambda: the streams read config.threshold by default
        model.config.threshold = self.threshold
        return AutoregressiveModule(model, self.threshold)

    def enable_activation_checkpointing(self, model: nn.Module) -> None:
        nugget2d_of(model).enable_activation_checkpointing()  # the routing-aware one (Nugget2DModel)

    def collate(self, rows: list[dict[str, Any]], step: int, rank: int, train: bool) -> Batch:
        return collate_segments(rows, pad_id(self.tokenizer()))

    loss = staticmethod(model_loss)
    logits = staticmethod(model_logits)
    n_target_tokens = staticmethod(segment_target_tokens)
    n_tokens = staticmethod(segment_tokens)
    mismatch = staticmethod(mismatch_distant)
    parameter_counts = staticmethod(trainable_and_frozen)

    def export(self, model: nn.Module, directory: Path) -> None:
        export_nugget2d(model, directory, self.usage(), self.tokenizer)


class LMBaselineModule(Nugget2DModule):
    """``forward(input_ids [B, T], predict_last [1])`` -> ``.loss`` (mean NLL of the last
    ``predict_last`` tokens) and ``.logits [B, T, V]`` of an LM baseline
    (``nugget_core.nugget2d.baseline_lm_loss``)."""

    model: Nugget2DModel

    def __init__(self, model: Nugget2DModel, system: str) -> None:
        super().__init__()
        self.model, self.system = model, system

    def forward(self, input_ids: torch.Tensor, predict_last: torch.Tensor) -> Any:
        from nugget_core.nugget2d import baseline_lm_loss

        return baseline_lm_loss(self.model, self.system, input_ids, int(predict_last[0]))


@dataclass
class LMBaselineTask(Nugget2DTaskFields):
    """An LM baseline of the autoregressive table (``train_nugget2d_ar``'s variants):
    ``full`` or ``compressive`` (chunks of ``round(1 / nugget2d.ratio)``), trained on the
    autoregressive model's segments with its LoRA theta only (Nugget2D §5.1: "the same
    configuration"); phi, scorer and soft prompt stay untouched. Saved as a Nugget2D
    model, so the evaluation's streams decode it with ``adapter="decoder"``."""

    lm_corpus: str = "pile"  # build_lm's lm_<corpus>.parquet
    system: str = "full"
    find_unused_parameters: bool = field(default=True, init=False)  # frozen adapter / scorer
    _tok: Any = field(default=None, init=False, repr=False)  # loaded once per process

    def __post_init__(self) -> None:
        from nugget_core.nugget2d.baselines import BASELINE_SYSTEMS

        if self.system not in BASELINE_SYSTEMS:
            raise ValueError(f"LM baseline {self.system!r}: expected one of {BASELINE_SYSTEMS}")

    def tokenizer(self) -> Any:
        if self._tok is None:
            self._tok = load_tokenizer(self.base_dir)
        return self._tok

    def usage(self) -> Nugget2DUsage:
        from nugget_core.nugget2d import Nugget2DUsage

        return Nugget2DUsage(objective=f"lm_baseline_{self.system}", soft_prompt=False)  # plain text

    def load_split(self, split: str) -> list[dict[str, Any]]:
        return split_rows(self, segment_rows(self.data, self.lm_corpus, split), split)

    def build_model(self, init_dir: Path | None) -> nn.Module:
        from nugget_core.nugget2d import DECODER
        from nugget_core.nugget2d.adapters import adapter_parameters

        model = saved_or_fresh(self, init_dir)
        for p in model.parameters():
            p.requires_grad_(False)
        for p in adapter_parameters(model.peft, DECODER):
            p.requires_grad_(True)
        return LMBaselineModule(model, self.system)

    def enable_activation_checkpointing(self, model: nn.Module) -> None:
        nugget2d_of(model).enable_activation_checkpointing()  # the routing-aware one (Nugget2DModel)

    def collate(self, rows: list[dict[str, Any]], step: int, rank: int, train: bool) -> Batch:
        return collate_segments(rows, pad_id(self.tokenizer()))

    loss = staticmethod(model_loss)
    logits = staticmethod(model_logits)
    n_target_tokens = staticmethod(segment_target_tokens)
    n_tokens = staticmethod(segment_tokens)
    mismatch = staticmethod(mismatch_distant)
    parameter_counts = staticmethod(trainable_and_frozen)

    def export(self, model: nn.Module, directory: Path) -> None:
        export_nugget2d(model, directory, self.usage(), self.tokenizer)
