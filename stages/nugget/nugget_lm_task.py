"""The Nugget LM training task (Nugget §6.2, appendix B.2): one system of table 3.

Rows are the training windows of ``build_nugget_lm``'s articles (`nugget_core.nugget.windows`:
non-overlapping segments of ``segment_tokens``, every token scored); a batch reads the
``h`` segments before each window through the system's memory, ``h`` drawn from
``histories`` per step (seeded, the same on every rank), the largest ``h`` for dev.
``memory="none"`` (the Transformer baseline) reads no history at all.

The model starts from an autoencoder (appendix B.2: "each language model is initialized
from a checkpoint of the AE model, even if they do not require the input of history
nuggets"): ``init_dir`` holds a `NuggetModel` (Nugget; the Compressive and Transformer
baselines take its HF weights with the Nugget parts removed) or a `BottleneckModel`
(TSDAE). Every parameter trains, except what `NuggetModel` itself freezes (the layers
below the scorer's, paper §3.3).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from torch import nn

from stages.nugget.artifacts.data import NuggetLMCorpus, TokenDocuments
from stages.training.task import Batch
from stages.training.task_steps import (
    checkpointing_unsupported,
    derange,
    export_pretrained,
    keep_dev,
    labelled_tokens,
    load_tokenizer,
    model_logits,
    model_loss,
    trainable_and_frozen,
)


@dataclass
class NuggetLMTask:
    """Picklable: strings and numbers; data and tokenizer load lazily per process."""

    corpus: NuggetLMCorpus
    tokenizer_dir: str
    init_dir: str  # the autoencoder this system starts from
    memory: str  # nugget_core.NuggetLMConfig.memory
    ratio: float | None
    chunk_tokens: int
    segment_tokens: int
    histories: list[int]
    decoder_start_id: int
    pad_id: int
    dev_examples: int = 0
    seed: int = 0
    attn_implementation: str = "sdpa"
    find_unused_parameters: bool = field(default=True, init=False)  # e.g. the scorer of a Nugget with no memory use
    _docs: dict[str, TokenDocuments] = field(default_factory=dict, init=False, repr=False)
    _tok: Any = field(default=None, init=False, repr=False)
    _special: Any = field(default=None, init=False, repr=False)  # nugget_core.nugget.SpecialTokens

    def tokenizer(self) -> Any:
        if self._tok is None:
            self._tok = load_tokenizer(self.tokenizer_dir)
        return self._tok

    def load_split(self, split: str) -> list[tuple[str, Any]]:
        from nugget_core.nugget import windows

        docs = self._docs.setdefault(split, self.corpus.documents(split))
        rows = [(split, w) for i, n in enumerate(docs.lengths()) for w in windows(i, n, self.segment_tokens)]
        rows = keep_dev(rows, split, self.dev_examples)
        if not rows:
            raise ValueError(f"build_nugget_lm split {split!r}: no window of {self.segment_tokens} tokens")
        return rows

    def history(self, step: int, train: bool) -> int:
        """``h`` of a batch: drawn per step in training, the largest for dev (0 without memory)."""
        if self.memory == "none":
            return 0
        if not train:
            return max(self.histories)
        return int(np.random.default_rng([self.seed, max(step, 0)]).choice(self.histories))

    def collate(self, rows: list[tuple[str, Any]], step: int, rank: int, train: bool) -> Batch:
        from nugget_core.nugget import collate_windows

        splits = {split for split, _ in rows}
        if len(splits) != 1:
            raise ValueError(f"a batch mixes splits {sorted(splits)}")
        docs = self._docs[splits.pop()]
        return collate_windows(
            docs, [w for _, w in rows], self.segment_tokens, self.history(step, train),
            decoder_start_id=self.decoder_start_id, pad_id=self.pad_id, wrap_segment=self.special_tokens(),
        )

    def special_tokens(self) -> Any:
        """The special tokens around each history segment (`nugget_core.nugget.SpecialTokens`)."""
        from nugget_core.nugget import SpecialTokens

        if self._special is None:
            self._special = SpecialTokens.of(self.tokenizer())
        return self._special

    def build_model(self, init_dir: Path | None) -> nn.Module:
        from nugget_core import NuggetLM, NuggetLMConfig, NuggetModel
        from nugget_core.baselines import BottleneckModel

        impl = self.attn_implementation
        if init_dir is not None:  # resume
            return NuggetLM.from_pretrained(init_dir, attn_implementation=impl)
        special = self.special_tokens()
        config = NuggetLMConfig(memory=self.memory, ratio=self.ratio, chunk_tokens=self.chunk_tokens,
                                segment_wrap=(len(special.prefix), len(special.suffix)))
        if self.memory == "mean":
            return NuggetLM(BottleneckModel.from_pretrained(self.init_dir, attn_implementation=impl), config)
        model = NuggetModel.from_pretrained(self.init_dir, attn_implementation=impl)
        return NuggetLM(model if self.memory == "nugget" else model.unload(), config)

    def enable_activation_checkpointing(self, model: nn.Module) -> None:
        raise checkpointing_unsupported(self)

    loss = staticmethod(model_loss)
    logits = staticmethod(model_logits)
    n_target_tokens = staticmethod(labelled_tokens)

    @staticmethod
    def n_tokens(batch: Batch) -> int:
        history = int(batch["history_mask"].sum()) if "history_mask" in batch else 0
        return labelled_tokens(batch) + history

    @staticmethod
    def mismatch(batch: Batch) -> Batch | None:
        """Each window reads another window's history segments through its memory (None without
        memory: the Transformer baseline reads no history)."""
        return derange(batch, ("history_ids", "history_mask")) if "history_ids" in batch else None

    parameter_counts = staticmethod(trainable_and_frozen)

    def export(self, model: nn.Module, directory: Path) -> None:
        """`NuggetLM.save_pretrained` + tokenizer: loadable outside Ray."""
        export_pretrained(model, directory, self.tokenizer)
