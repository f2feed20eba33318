"""Training task of the RE retrieval study (RE §4.4, appendix B): a DPR bi-encoder whose
two towers start from one RE encoder (`nugget_core.biencoder.BiEncoder`).

Examples are (query, positive passage, hard negative passages). A batch holds B queries,
their B positives and ``hard_negatives`` of each query's negatives, drawn per step with
the step's seed; every other passage of the batch, the batches of all workers together
(`nugget_core.biencoder` gathers them), is an in-batch negative (DPR).

Each tower is the encoder of a `nugget_core.restorable.RestorableModel` (pooling, W and
any extra layers): both start from ``init`` (a train_re model folder), or, for the
paper's "random initialize" rows, from the pretrained encoder-decoder with fresh
untrained new parts (``init`` empty; ``restorable`` says which). The export writes each
tower back into a full RestorableModel folder (``query/``, ``passage/``), so
``RestorableModel.encoder_from_pretrained`` loads either.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from stages.common.padding import pad
from stages.restorable.artifacts import RetrievalData
from stages.restorable.restoration_task import RestorableBase
from stages.training.task import Batch
from stages.training.task_steps import (
    checkpointing_unsupported,
    load_tokenizer,
    model_logits,
    model_loss,
    trainable_and_frozen,
)

TOWERS = ("query", "passage")


@dataclass(frozen=True)
class RetrievalExample:
    query: str
    positive: str
    negatives: tuple[str, ...]


@dataclass
class RetrievalTask:
    base: RestorableBase
    restorable: dict[str, Any]  # RestorableConfig fields of the towers' model
    init: str  # a train_re model folder, or "" (the pretrained encoder, new parts untrained)
    # build_re_retrieval's output, read by each worker (`load_split`): the task is pickled
    # into every fit's config, once per bi-encoder, and Natural Questions has ~59k train
    # queries, each with its positive and hard-negative passages
    data: RetrievalData
    dev_examples: int = 0  # the first n dev queries (0 = all)
    hard_negatives: int = 1
    max_query_tokens: int = 70
    max_passage_tokens: int = 350
    seed: int = 0
    find_unused_parameters: bool = field(default=False, init=False)
    _tok: Any = field(default=None, init=False, repr=False)
    _template: Any = field(default=None, init=False, repr=False)  # the model whose encoder the towers are
    # token ids of each text already seen, per length cap: every step draws from the same few
    # hundred passages, and a section is tokenised whole before its truncation
    _ids: dict[tuple[str, int], list[int]] = field(default_factory=dict, init=False, repr=False)

    def tokenizer(self) -> Any:
        if self._tok is None:
            self._tok = load_tokenizer(self.init or self.base.path)
        return self._tok

    def load_split(self, split: str) -> list[RetrievalExample]:
        limit = self.dev_examples if split == "dev" else 0
        rows = [RetrievalExample(r["query"], r["positive"], tuple(r["negatives"]))
                for r in self.data.rows(split, limit)]
        if not rows:
            raise ValueError(f"{self.data.path}: retrieval split {split!r} has no queries")
        return rows

    def _fresh(self) -> Any:
        from nugget_core.restorable import RestorableConfig, RestorableModel, get_restorable_model

        if self.init:
            return RestorableModel.from_pretrained(self.init)
        base = self.base.load()
        torch.manual_seed(self.seed)  # the untrained new parts, alike on every rank
        return get_restorable_model(base, RestorableConfig(**self.restorable))

    def build_model(self, init_dir: Path | None) -> nn.Module:
        from nugget_core.biencoder import BiEncoder
        from nugget_core.restorable import RestorableModel

        if init_dir is not None:  # resume: the towers export wrote
            self._template = RestorableModel.from_pretrained(Path(init_dir) / "query")
            towers = [RestorableModel.encoder_from_pretrained(Path(init_dir) / t) for t in TOWERS]
        else:
            self._template = self._fresh()
            towers = [copy.deepcopy(self._template.encoder) for _ in TOWERS]
        for tower in towers:  # DPR fine-tunes the whole tower, also one whose restoration training froze it
            tower.requires_grad_(True)
        return BiEncoder(*towers)

    def enable_activation_checkpointing(self, model: nn.Module) -> None:
        raise checkpointing_unsupported(self)

    def collate(self, rows: list[RetrievalExample], step: int, rank: int, train: bool) -> Batch:
        """``query_ids/mask [B, Tq]``, ``passage_ids/mask [B (1 + h), Tp]``: positives first."""
        tok = self.tokenizer()
        rng = np.random.default_rng([self.seed, max(step, 0), rank])
        negatives = []
        for r in rows:
            if len(r.negatives) < self.hard_negatives:
                raise ValueError(f"query {r.query[:40]!r} has {len(r.negatives)} negatives, "
                                 f"train.re_retrieval.hard_negatives={self.hard_negatives}")
            picks = rng.choice(len(r.negatives), size=self.hard_negatives, replace=False) if train \
                else range(self.hard_negatives)  # dev: the same passages at every evaluation
            negatives += [r.negatives[i] for i in picks]
        queries = self._token_ids([r.query for r in rows], self.max_query_tokens)
        passages = self._token_ids([r.positive for r in rows] + negatives, self.max_passage_tokens)
        q_ids, q_mask = pad(queries, tok.pad_token_id)
        p_ids, p_mask = pad(passages, tok.pad_token_id)
        return {"query_ids": q_ids, "query_mask": q_mask, "passage_ids": p_ids, "passage_mask": p_mask}

    def _token_ids(self, texts: list[str], cap: int) -> list[list[int]]:
        """The ids of ``texts`` truncated to ``cap`` tokens (as one tokenizer call on them gives),
        each text tokenised once per process."""
        new = list(dict.fromkeys(t for t in texts if (t, cap) not in self._ids))
        if new:
            ids = self.tokenizer()(new, truncation=True, max_length=cap)["input_ids"]
            self._ids.update({(t, cap): i for t, i in zip(new, ids, strict=True)})
        return [self._ids[(t, cap)] for t in texts]

    loss = staticmethod(model_loss)
    logits = staticmethod(model_logits)

    @staticmethod
    def n_target_tokens(batch: Batch) -> int:
        return int(batch["query_ids"].shape[0])  # the loss is a mean over queries

    @staticmethod
    def n_tokens(batch: Batch) -> int:
        return int(batch["query_mask"].sum()) + int(batch["passage_mask"].sum())

    parameter_counts = staticmethod(trainable_and_frozen)

    def export(self, model: nn.Module, directory: Path) -> None:
        """Each tower inside a copy of the RestorableModel it came from (``query/``, ``passage/``)."""
        if self._template is None:
            self._template = self._fresh()
        for name in TOWERS:
            self._template.encoder.load_state_dict(getattr(model, name).state_dict())
            self._template.save_pretrained(Path(directory) / name)
            self.tokenizer().save_pretrained(Path(directory) / name)
