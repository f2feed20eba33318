"""`AutoencodingTask`: the reconstruction study of Nugget2D §4 (stage ``train_nugget2d_ae``).

One task trains one system on build_lm's continuation windows (``doc + prompt + answer``,
the first ``max_doc_tokens`` tokens): ``nugget2d`` (a Nugget2D compressor at its
``nugget2d.ratio``) or ``icae`` (`nugget_core.nugget2d.ICAEModel` with ``slots`` memory
slots), both with the autoencoding parts trainable (phi, theta, soft prompt; the scorer
for Nugget2D, the memory for ICAE), the same data and the same loss: reconstruct the
document followed by EOS after the one-token soft prompt. EOS is what lets the
evaluation decode a whole document and stop (`nugget_core.nugget2d.autoencoding_loss`,
the compressor objective, has no EOS: its documents are fixed-size chunks).

Training documents are cut to a length drawn uniformly from ``[min_doc_tokens, n]``
(seeded by seed, step and rank), so each model sees every length fig. 5 plots; dev
documents stay whole.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from torch import nn

from stages.common.padding import pad
from stages.nugget2d.lm_task import pad_id
from stages.nugget2d.nugget2d_steps import (
    Nugget2DModule,
    Nugget2DTaskFields,
    export_nugget2d,
    fresh_nugget2d,
    inner_model,
    nugget2d_of,
    saved_or_fresh,
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
    from nugget_core.nugget2d import ICAEModel, Nugget2DModel, Nugget2DUsage

SYSTEMS = ("nugget2d", "icae")


class AutoencodingModule(Nugget2DModule):
    """``forward(doc_ids, doc_mask, target_ids, target_mask)`` -> ``Nugget2DOutput`` of
    ``-log p(target | compressed doc, soft prompt)``; ``.model`` is the `Nugget2DModel`
    or `ICAEModel`."""

    def __init__(self, model: Nugget2DModel | ICAEModel, system: str) -> None:
        super().__init__()
        self.model, self.system = model, system

    def forward(self, doc_ids: torch.Tensor, doc_mask: torch.Tensor, target_ids: torch.Tensor,
                target_mask: torch.Tensor) -> Any:
        if self.system == "icae":
            return self.model(doc_ids, doc_mask, target_ids, target_mask)
        return self.model(doc_ids, doc_mask, None, None, target_ids, target_mask, soft_prompt=True)


@dataclass
class AutoencodingTask(Nugget2DTaskFields):
    """One system of the autoencoding study (module docstring)."""

    system: str = "nugget2d"
    slots: int = 0  # icae: memory slots
    min_doc_tokens: int = 16
    max_doc_tokens: int = 512
    find_unused_parameters: bool = field(default=True, init=False)  # frozen adapter / scorer
    _tok: Any = field(default=None, init=False, repr=False)  # loaded once per process

    def __post_init__(self) -> None:
        if self.system not in SYSTEMS:
            raise ValueError(f"autoencoding system {self.system!r}: expected one of {SYSTEMS}")
        if self.system == "icae" and self.slots < 1:
            raise ValueError(f"icae needs slots >= 1, got {self.slots}")

    def tokenizer(self) -> Any:
        if self._tok is None:
            self._tok = load_tokenizer(self.base_dir)
        return self._tok

    def usage(self) -> Nugget2DUsage:
        """Saved beside the model: reconstruction reads the soft prompt."""
        from nugget_core.nugget2d import Nugget2DUsage

        return Nugget2DUsage(objective="autoencoding" if self.system == "nugget2d" else "icae", soft_prompt=True)

    def load_split(self, split: str) -> list[dict[str, Any]]:
        rows = [{"doc": window[: self.max_doc_tokens]} for window in self.data.continuation_windows(split)]
        return split_rows(self, rows, split)

    def build_model(self, init_dir: Path | None) -> nn.Module:
        from nugget_core.nugget2d import ICAEModel, load_icae, set_objective

        if self.system == "nugget2d":
            model = saved_or_fresh(self, init_dir)
            set_objective(model, "autoencoding")
            return AutoencodingModule(model, self.system)
        if init_dir is not None:  # a resumed attempt
            icae = load_icae(init_dir, self.base_dir, attn_implementation=self.attn_implementation)
        else:
            torch.manual_seed(self.seed)
            icae = ICAEModel(fresh_nugget2d(self), self.slots)
        icae.trainable()
        return AutoencodingModule(icae, self.system)

    def enable_activation_checkpointing(self, model: nn.Module) -> None:
        nugget2d_of(model).enable_activation_checkpointing()  # the routing-aware one (Nugget2DModel)

    def collate(self, rows: list[dict[str, Any]], step: int, rank: int, train: bool) -> Batch:
        """``doc_*`` (the documents, cut when training) and ``target_*`` (+ EOS)."""
        docs = [r["doc"] for r in rows]
        if train:  # dev and probe batches (step -1) stay whole
            rng = np.random.default_rng([self.seed, step, rank])
            docs = [d[: int(rng.integers(min(self.min_doc_tokens, len(d)), len(d) + 1))] for d in docs]
        eos = self.tokenizer().eos_token_id
        if eos is None:
            raise ValueError(f"{self.base_dir}: the tokenizer has no EOS token; reconstruction needs one to stop")
        doc_ids, doc_mask = pad(docs, pad_id(self.tokenizer()))
        target_ids, target_mask = pad([d + [eos] for d in docs], pad_id(self.tokenizer()))
        return {"doc_ids": doc_ids, "doc_mask": doc_mask, "target_ids": target_ids, "target_mask": target_mask}

    @staticmethod
    def mismatch(batch: Batch) -> Batch:
        """Each document reconstructed from another document's nuggets (ICAE: memory slots)."""
        return derange(batch, ("doc_ids", "doc_mask"))

    loss = staticmethod(model_loss)
    logits = staticmethod(model_logits)

    @staticmethod
    def n_target_tokens(batch: Batch) -> int:
        return int(batch["target_mask"].sum())

    @staticmethod
    def n_tokens(batch: Batch) -> int:
        return int(batch["doc_mask"].sum() + batch["target_mask"].sum())

    parameter_counts = staticmethod(trainable_and_frozen)

    def export(self, model: nn.Module, directory: Path) -> None:
        """A Nugget2D folder (`stages.nugget2d.nugget2d_steps.export_nugget2d`), or for icae
        ``save_icae`` (the Nugget2D parts and the memory slots), with the tokenizer."""
        from nugget_core.nugget2d import ICAEModel, save_icae

        if self.system == "nugget2d":
            export_nugget2d(model, directory, self.usage(), self.tokenizer)
            return
        icae = inner_model(model)
        if not isinstance(icae, ICAEModel):
            raise TypeError(f"{type(icae).__name__}: the icae system exports an ICAEModel")
        icae.nugget2d.usage = self.usage()
        save_icae(icae, directory)
        self.tokenizer().save_pretrained(directory)
