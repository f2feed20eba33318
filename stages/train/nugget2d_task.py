"""The Nugget2D training tasks: :class:`Nugget2DCompressorTask` (compressor objectives) and
:class:`Nugget2DARTask` (the autoregressive LM). Both implement
:class:`stages.train.task.TrainingTask`.

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

import pyarrow.parquet as pq
import torch
from torch import nn

from stages.common.padding import pad
from stages.train.lm_task import BaseLMTask

if TYPE_CHECKING:
    from nugget_core.nugget2d import ICAEModel, Nugget2DConfig, Nugget2DModel, Nugget2DUsage

CHUNKS = ("doc", "prompt", "answer")


@dataclass(frozen=True)
class CompressorObjective:
    """What distinguishes the compressor objectives in training: data and batch layout."""

    name: str  # a nugget_core.nugget2d.Objective value
    chunks: tuple[str, ...]  # the batch holds <chunk>_ids / <chunk>_mask [B, T_chunk] for each
    target: str  # the chunk the loss predicts (its mask counts the target tokens)
    task_records: bool  # rows from build_lm's <finetune_task>.jsonl; else continuation.parquet


COMPRESSOR_OBJECTIVES: dict[str, CompressorObjective] = {
    "autoencoding": CompressorObjective("autoencoding", ("doc",), target="doc", task_records=False),
    "continuation": CompressorObjective("continuation", CHUNKS, target="answer", task_records=False),
    "finetune": CompressorObjective("finetune", CHUNKS, target="answer", task_records=True),
}


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
class Nugget2DTaskBase(BaseLMTask):
    """What both Nugget2D tasks share: the model config, building / loading, export."""

    nugget2d: Any  # stages.config.schema.Nugget2DSection
    attn_implementation: str = "sdpa"
    dev_examples: int = 0
    seed: int = 0
    init_dir: str | None = None  # a saved Nugget2D to start from (fine-tuning a trained compressor)
    find_unused_parameters: bool = field(default=True, init=False)  # frozen adapter / scorer

    def model_config(self) -> Nugget2DConfig:
        from dataclasses import asdict

        from nugget_core.nugget2d import Nugget2DConfig

        return Nugget2DConfig(**asdict(self.nugget2d))  # the `nugget2d` section has all its fields

    def _records(self, split: str) -> list[dict[str, Any]]:  # pragma: no cover - abstract
        raise NotImplementedError

    def enable_activation_checkpointing(self, model: nn.Module) -> None:
        nugget2d_of(model).enable_activation_checkpointing()  # the routing-aware one (Nugget2DModel)

    def load_split(self, split: str) -> list[dict[str, Any]]:
        rows = self._records(split)
        if split == "dev" and self.dev_examples:
            rows = rows[: self.dev_examples]
        if not rows:
            raise ValueError(f"{type(self).__name__}: split {split!r} of {self.data.path} has no rows")
        return rows

    @staticmethod
    def _parquet_rows(path: Path, split: str) -> list[dict[str, Any]]:
        return [r for r in pq.read_table(path).to_pylist() if r["split"] == split]

    def _fresh_model(self) -> Nugget2DModel:
        from nugget_core.nugget2d import Nugget2DModel

        return Nugget2DModel.from_lm(self.base_dir, self.model_config(), attn_implementation=self.attn_implementation)

    def _nugget2d_model(self, init_dir: Path | None) -> Nugget2DModel:
        """The saved model (a resume's ``init_dir`` wins over the task's), else a fresh one."""
        from nugget_core.nugget2d import load_nugget2d

        saved = init_dir if init_dir is not None else self.init_dir
        if saved is not None:
            return load_nugget2d(saved, self.base_dir, attn_implementation=self.attn_implementation)
        torch.manual_seed(self.seed)  # LoRA, scorer and soft prompt initialisation
        return self._fresh_model()

    def usage(self) -> Nugget2DUsage:
        """How the trained model reads its inputs (`nugget_core.nugget2d.Nugget2DUsage`),
        saved beside it; the subclasses name their objective."""
        from nugget_core.nugget2d import Nugget2DUsage

        return Nugget2DUsage(objective=self.objective_name(), soft_prompt=self.objective_name() != "finetune")

    def objective_name(self) -> str:  # pragma: no cover - abstract
        raise NotImplementedError

    def export(self, model: nn.Module, directory: Path) -> None:
        """``save_nugget2d`` (peft adapters + scorer + soft prompt + config + usage) +
        tokenizer. The base LM reference is written where the model lands in the stage
        output (a path relative to the final folder: `stages.train.model_card`)."""
        from nugget_core.nugget2d import save_nugget2d

        save_nugget2d(nugget2d_of(model), directory, usage=self.usage())
        self.tokenizer().save_pretrained(directory)


@dataclass
class Nugget2DCompressorTask(Nugget2DTaskBase):
    """Compressor objectives autoencoding / continuation / finetune (stages ``train_nugget2d``
    and ``train_nugget2d_ft``)."""

    objective: str = "continuation"  # a key of COMPRESSOR_OBJECTIVES
    finetune_task: str = "qa"  # finetune: build_lm's qa or summarization records
    max_doc_tokens: int = 0  # finetune: document-part tokens kept (0 = all)
    prompt_format: str = "inst"  # finetune: nugget_core.nugget2d.prompts.PROMPT_FORMATS

    def __post_init__(self) -> None:
        if self.objective not in COMPRESSOR_OBJECTIVES:
            raise ValueError(f"Nugget2D compressor objective {self.objective!r}: expected one of "
                             f"{sorted(COMPRESSOR_OBJECTIVES)} (autoregressive: Nugget2DARTask)")

    @property
    def spec(self) -> CompressorObjective:
        return COMPRESSOR_OBJECTIVES[self.objective]

    def objective_name(self) -> str:
        return self.objective

    def usage(self) -> Nugget2DUsage:
        from dataclasses import replace

        usage = super().usage()
        if self.objective != "finetune":
            return usage
        return replace(usage, finetune_task=self.finetune_task, prompt_format=self.prompt_format)

    def _records(self, split: str) -> list[dict[str, Any]]:
        if self.spec.task_records:
            return self.task_examples(self.finetune_task, split, self.max_doc_tokens, self.prompt_format)
        return self._parquet_rows(self.data.continuation(), split)

    def build_model(self, init_dir: Path | None) -> nn.Module:
        from nugget_core.nugget2d import set_objective

        model = self._nugget2d_model(init_dir)
        set_objective(model, self.spec.name)
        return CompressorModule(model, self.spec.name)

    def collate(self, rows: list[dict[str, Any]], step: int, rank: int, train: bool) -> dict[str, torch.Tensor]:
        """``<chunk>_ids`` / ``<chunk>_mask`` ``[B, T_chunk]`` (right-padded) per chunk."""
        batch = {}
        for chunk in self.spec.chunks:
            ids, mask = pad([r[chunk] for r in rows], self.pad_id())
            batch[f"{chunk}_ids"], batch[f"{chunk}_mask"] = ids, mask
        return batch

    def n_target_tokens(self, batch: dict[str, torch.Tensor]) -> int:
        return int(batch[f"{self.spec.target}_mask"].sum())

    def n_tokens(self, batch: dict[str, torch.Tensor]) -> int:
        return sum(int(batch[f"{chunk}_mask"].sum()) for chunk in self.spec.chunks)


@dataclass
class _SegmentsTask(Nugget2DTaskBase):
    """Tasks on build_lm's LM segments: predict the recent tokens after the distant ones."""

    def usage(self) -> Nugget2DUsage:
        from nugget_core.nugget2d import Nugget2DUsage

        return Nugget2DUsage(objective=self.objective_name(), soft_prompt=False)  # plain text, no soft prompt

    lm_corpus: str = "pile"  # build_lm's lm_<corpus>.parquet

    def _records(self, split: str) -> list[dict[str, Any]]:
        """``{"ids": distant + recent, "predict": len(recent)}``; segments whose recent
        part is shorter than the longest are dropped (one ``predict`` per batch)."""
        rows = self._parquet_rows(self.data.segments(self.lm_corpus), split)
        width = max((len(r["recent"]) for r in rows), default=0)
        return [{"ids": r["distant"] + r["recent"], "predict": width} for r in rows if len(r["recent"]) == width]

    def collate(self, rows: list[dict[str, Any]], step: int, rank: int, train: bool) -> dict[str, torch.Tensor]:
        """``input_ids [B, T]`` and ``predict_last [1]`` (tokens at the end to predict)."""
        ids, _ = pad([r["ids"] for r in rows], self.pad_id())
        return {"input_ids": ids, "predict_last": torch.tensor([rows[0]["predict"]], device="cpu")}

    def n_target_tokens(self, batch: dict[str, torch.Tensor]) -> int:
        return int(batch["predict_last"][0]) * batch["input_ids"].shape[0]

    def n_tokens(self, batch: dict[str, torch.Tensor]) -> int:
        return batch["input_ids"].numel()


@dataclass
class Nugget2DARTask(_SegmentsTask):
    """The autoregressive LM (stage ``train_nugget2d_ar``)."""

    scorer_dir: str | None = None  # a saved Nugget2D whose scorer is copied in and frozen
    threshold: float | None = None  # the calibrated Lambda (None: in-batch (1 - r) quantile)

    def _fresh_model(self) -> Nugget2DModel:
        from nugget_core.nugget2d import load_scorer

        model = super()._fresh_model()
        if self.scorer_dir is not None:
            load_scorer(model, self.scorer_dir)
        return model

    def objective_name(self) -> str:
        return "autoregressive"

    def build_model(self, init_dir: Path | None) -> nn.Module:
        model = self._nugget2d_model(init_dir)
        if self.scorer_dir is not None:  # paper §2.5: the reused scorer "is not optimized"
            model.scorer.requires_grad_(False)
        # the checkpoint carries its Lambda: the streams read config.threshold by default
        model.config.threshold = self.threshold
        return AutoregressiveModule(model, self.threshold)


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
class LMBaselineTask(_SegmentsTask):
    """An LM baseline of the autoregressive table (``train_nugget2d_ar``'s variants):
    ``full`` or ``compressive`` (chunks of ``round(1 / nugget2d.ratio)``), trained on the
    autoregressive model's segments with its LoRA theta only (Nugget2D §5.1: "the same
    configuration"); phi, scorer and soft prompt stay untouched. Saved as a Nugget2D
    model, so the evaluation's streams decode it with ``adapter="decoder"``."""

    system: str = "full"

    def objective_name(self) -> str:
        return f"lm_baseline_{self.system}"

    def __post_init__(self) -> None:
        from nugget_core.nugget2d.baselines import BASELINE_SYSTEMS

        if self.system not in BASELINE_SYSTEMS:
            raise ValueError(f"LM baseline {self.system!r}: expected one of {BASELINE_SYSTEMS}")

    def build_model(self, init_dir: Path | None) -> nn.Module:
        from nugget_core.nugget2d import DECODER
        from nugget_core.nugget2d.adapters import adapter_parameters

        model = self._nugget2d_model(init_dir)
        for p in model.parameters():
            p.requires_grad_(False)
        for p in adapter_parameters(model.peft, DECODER):
            p.requires_grad_(True)
        return LMBaselineModule(model, self.system)
