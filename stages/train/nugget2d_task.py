"""The Nugget2D training task: compressor objectives and the autoregressive LM.

Objectives (paper §2.4-2.5; trainable parts per ``nugget_core.nugget2d.set_objective``):

- ``autoencoding``: reconstruct a document from its nuggets (``continuation.parquet``'s
  ``doc`` chunks);
- ``continuation``: doc / prompt / answer = consecutive chunks (``continuation.parquet``);
- ``finetune``: answer a task prompt from the nuggets of its document (``qa.jsonl`` or
  ``summarization.jsonl``, cut and tokenised as the evaluations do, answer + EOS),
  optionally starting from a trained compressor (``init_dir``);
- ``autoregressive``: the parallel training approximation on full-length LM segments
  (``lm_pile.parquet`` / ``lm_wiki.parquet``): predict the recent tokens. As in the paper
  the scorer can come frozen from the compressor (``scorer_dir``) with nuggets above a
  calibrated Lambda (``threshold``); without them a ratio r of each batch's tokens
  become nuggets.

The model handed to the engine is :class:`ObjectiveModule`, whose ``forward`` computes
the objective's loss, so DDP / DeepSpeed see one ordinary module call per micro-batch.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pyarrow.parquet as pq
import torch
from torch import nn

from stages.common.padding import pad
from stages.train.lm_task import BaseLMTask

CHUNKS = ("doc", "prompt", "answer")


class ObjectiveModule(nn.Module):
    """``forward(**batch)`` -> output with ``.loss`` (and ``.logits``) for one objective."""

    def __init__(self, model: nn.Module, objective: str, threshold: float | None = None) -> None:
        super().__init__()
        self.model, self.objective, self.threshold = model, objective, threshold

    def forward(self, **batch: torch.Tensor) -> Any:
        from nugget_core.nugget2d import (
            ARWindows,
            ar_forward,
            ar_scores,
            objective_loss,
            threshold_for_ratio,
        )

        if self.objective == "autoregressive":
            ids, predict = batch["input_ids"], int(batch["predict_last"][0])
            threshold = self.threshold
            if threshold is None:  # no calibrated Lambda: a ratio r of the batch's tokens
                with torch.no_grad():
                    scores = ar_scores(self.model, ids, ARWindows.from_model(self.model).scorer)
                threshold = threshold_for_ratio(scores, self.model.config.ratio)
            logits = ar_forward(self.model, ids, threshold=threshold).logits
            start = ids.shape[1] - predict
            loss = nn.functional.cross_entropy(
                logits[:, start - 1 : -1].flatten(0, 1).float(), ids[:, start:].flatten()
            )
            return SimpleNamespace(loss=loss, logits=logits)
        return objective_loss(self.model, self.objective, batch)


@dataclass
class Nugget2DTask(BaseLMTask):
    objective: str
    nugget2d: Any  # stages.config.schema.Nugget2DSection
    attn_implementation: str = "sdpa"
    finetune_task: str = "qa"
    max_doc_tokens: int = 0  # finetune: document-part tokens kept (0 = all)
    prompt_format: str = "inst"  # finetune: stages.common.prompts.PROMPT_FORMATS
    lm_corpus: str = "pile"
    dev_examples: int = 0
    seed: int = 0
    init_dir: str | None = None  # a saved Nugget2D to start from (fine-tuning a trained compressor)
    scorer_dir: str | None = None  # a saved Nugget2D whose scorer is copied in and frozen (autoregressive)
    threshold: float | None = None  # autoregressive: the calibrated Lambda (None: in-batch (1 - r) quantile)
    find_unused_parameters: bool = field(default=True, init=False)  # frozen adapter per objective

    def _records(self, split: str) -> list[dict[str, Any]]:
        data = Path(self.data_dir)
        if self.objective == "finetune":
            return self.task_examples(self.finetune_task, split, self.max_doc_tokens, self.prompt_format)
        name = f"lm_{self.lm_corpus}.parquet" if self.objective == "autoregressive" else "continuation.parquet"
        path = data / name
        if not path.exists():
            raise FileNotFoundError(f"Nugget2D training data missing: {path}")
        rows = [r for r in pq.read_table(path).to_pylist() if r["split"] == split]
        if self.objective == "autoregressive":
            width = max((len(r["recent"]) for r in rows), default=0)
            return [{"ids": r["distant"] + r["recent"], "predict": width} for r in rows if len(r["recent"]) == width]
        return rows

    def load_split(self, split: str) -> list[dict[str, Any]]:
        rows = self._records(split)
        if split == "dev" and self.dev_examples:
            rows = rows[: self.dev_examples]
        if not rows:
            raise ValueError(f"Nugget2D {self.objective}: split {split!r} of {self.data_dir} has no rows")
        return rows

    def model_config(self) -> Any:
        from nugget_core.nugget2d import Nugget2DConfig

        n = self.nugget2d
        return Nugget2DConfig(
            ratio=n.ratio, scorer_layer=n.scorer_layer, residual=n.residual, lora_rank=n.lora_rank,
            lora_alpha=n.lora_alpha, recent_window=n.recent_window,
            distant_window=n.distant_window or None, max_nuggets=n.max_nuggets or None,
        )

    def build_model(self, init_dir: Path | None) -> nn.Module:
        from nugget_core.nugget2d import Nugget2DModel, load_nugget2d, load_scorer, set_objective

        impl = {"attn_implementation": self.attn_implementation}
        init_dir = init_dir if init_dir is not None else self.init_dir  # a resume wins
        if init_dir is not None:
            model = load_nugget2d(init_dir, self.base_dir, **impl)
        else:
            torch.manual_seed(self.seed)  # LoRA, scorer and soft prompt initialisation
            model = Nugget2DModel.from_lm(self.base_dir, self.model_config(), **impl)
            if self.scorer_dir is not None:
                load_scorer(model, self.scorer_dir)
        if self.objective != "autoregressive":
            set_objective(model, self.objective)
        if self.scorer_dir is not None:  # paper §2.5: the reused scorer "is not optimized"
            model.scorer.requires_grad_(False)
        return ObjectiveModule(model, self.objective, self.threshold)

    def collate(self, rows: list[dict[str, Any]], step: int, rank: int, train: bool) -> dict[str, torch.Tensor]:
        if self.objective == "autoregressive":
            ids, _ = pad([r["ids"] for r in rows], self.pad_id())
            return {"input_ids": ids, "predict_last": torch.tensor([rows[0]["predict"]])}
        batch = {}
        for chunk in CHUNKS if self.objective != "autoencoding" else ("doc",):
            ids, mask = pad([r[chunk] for r in rows], self.pad_id())
            batch[f"{chunk}_ids"], batch[f"{chunk}_mask"] = ids, mask
        return batch

    @staticmethod
    def n_target_tokens(batch: dict[str, torch.Tensor]) -> int:
        if "input_ids" in batch:
            return int(batch["predict_last"][0]) * batch["input_ids"].shape[0]
        mask = batch.get("answer_mask", batch["doc_mask"])
        return int(mask.sum())

    @staticmethod
    def n_tokens(batch: dict[str, torch.Tensor]) -> int:
        if "input_ids" in batch:
            return batch["input_ids"].numel()
        return sum(int(v.sum()) for k, v in batch.items() if k.endswith("_mask"))

    def export(self, model: nn.Module, directory: Path) -> None:
        """``save_nugget2d`` (peft adapters + scorer + soft prompt + config) + tokenizer."""
        from nugget_core.nugget2d import save_nugget2d

        save_nugget2d(model.model, directory)
        self.tokenizer().save_pretrained(directory)
