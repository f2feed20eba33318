"""The Nugget encoder-decoder training task (objectives ``ae`` and ``mt``).

Input artifacts (contracts of the dataset stages): a HF tokenizer folder and
``{train,dev}.parquet`` with columns ``source``, ``target``, ``source_sentences``.
``ae`` reconstructs the source (optionally from a word-deleted copy: TSDAE's
noise) and also trains on ``train_ae.parquet`` when ``build_mt_docs`` wrote one (English-only
documents, ``data.mt.ae_sources``); ``mt`` produces the target. The sentence-boundary selector gets, per source,
the positions of the last token of each sentence, found from the tokenizer's character
offsets so the document is tokenised exactly as the model sees it; the chunking selector
gets the positions of punctuation tokens. ``encoder_side="target"`` swaps the corpus's
sides: the encoder reads the other language (AE on it, MT back to the source language;
Nugget appendix D), without sentence positions. A multilingual tokenizer (mBART-50) codes
the encoder's text and the labels each with its own language (`NuggetTask.language_codes`,
`stages.common.languages`); the exported model's tokenizer keeps those codes.

`BaselineTask` (`stages.nugget.baseline_task`) trains other models on the same data: the two
share their constructor fields (`NuggetTaskFields`) and this module's functions for the
steps (tokenizer, examples, batches, the Nugget model), each implementing every
`stages.training.task.TrainingTask` member itself.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow.parquet as pq
import torch
from torch import nn

from stages.common.languages import has_language_codes, set_language_codes
from stages.common.padding import pad
from stages.nugget.artifacts.data import MtDocuments
from stages.training.batches import Example, delete_words
from stages.training.task import Batch
from stages.training.task_steps import (
    IGNORE,
    checkpointing_unsupported,
    export_pretrained,
    labelled_tokens,
    load_tokenizer,
    mismatch_encoder_input,
    model_logits,
    model_loss,
    seq2seq_tokens,
    trainable_and_frozen,
)

if TYPE_CHECKING:
    from nugget_core import NuggetConfig, NuggetModel


def sentence_end_positions(text: str, sentences: list[str], offsets: list[tuple[int, int]]) -> list[int]:
    """Token positions whose character span ends a sentence of ``sentences``.

    Sentences are located in order in ``text``; a token ends sentence ``i`` if it is the
    last token starting before the sentence's end offset.
    """
    ends, cursor = [], 0
    for sentence in sentences:
        at = text.find(sentence, cursor)
        if at < 0:
            raise ValueError(f"sentence {sentence[:40]!r} not found in its document")
        cursor = at + len(sentence)
        ends.append(cursor)
    positions, e = [], 0
    for pos, (start, end) in enumerate(offsets):
        if end == 0 and start == 0:
            continue  # special tokens
        while e < len(ends) and start >= ends[e]:
            e += 1
        if e < len(ends) and end >= ends[e]:
            positions.append(pos)
            e += 1
    return positions


@dataclass(frozen=True)
class NuggetObjective:
    """What distinguishes ``ae`` from ``mt``: only the data."""

    target_column: str  # decoder target: the source itself (ae) or its translation (mt)
    noisy: bool  # deletion noise (``deletion_noise``) applies to the training input


ENCODER_SIDES = ("source", "target")
OBJECTIVES: dict[str, NuggetObjective] = {
    "ae": NuggetObjective(target_column="source", noisy=True),
    "mt": NuggetObjective(target_column="target", noisy=False),
}


@dataclass
class NuggetTaskFields:
    """The constructor fields of `NuggetTask` and `BaselineTask`, in this order (fields
    only: the steps they share are this module's functions, which read them)."""

    data: MtDocuments  # build_mt_docs's output
    tokenizer_dir: str
    objective: str  # ae | mt
    nugget: Any  # stages.config.schema.NuggetSection
    model: Any  # stages.config.schema.Seq2SeqModel
    deletion_noise: float = 0.0
    dev_examples: int = 0
    seed: int = 0
    # which side of the parallel corpus the encoder reads: "source" (the paper's English),
    # or "target" (its other language: AE on it, MT back to the source; Nugget app. D)
    encoder_side: str = "source"


def check_fields(task: NuggetTaskFields) -> None:
    """A ``ValueError`` for an objective or encoder side this module does not know."""
    if task.objective not in OBJECTIVES:
        raise ValueError(f"Nugget objective {task.objective!r}: expected one of {sorted(OBJECTIVES)}")
    if task.encoder_side not in ENCODER_SIDES:
        raise ValueError(f"Nugget encoder_side {task.encoder_side!r}: expected one of {ENCODER_SIDES}")


def task_language_codes(task: NuggetTaskFields, corpus_source: str, corpus_target: str) -> tuple[str, str]:
    """(encoder code, label code) of ``task``, from the corpus's two languages (the
    tokenizer stage's ``data.mt.src_lang`` / ``tgt_lang``): the encoder's side is the
    language it reads; the labels are in that language for AE (Nugget §3.4: "English
    documents on both the source and target sides") and in the other one for MT."""
    sides = {"source": corpus_source, "target": corpus_target}
    other = "target" if task.encoder_side == "source" else "source"
    writes_own_side = OBJECTIVES[task.objective].target_column == "source"
    return sides[task.encoder_side], sides[task.encoder_side if writes_own_side else other]


def nugget_tokenizer(task: NuggetTaskFields) -> Any:
    """The tokenizer of ``task.tokenizer_dir``; a multilingual one coding the encoder's
    text and the labels with `task_language_codes`."""
    tok = load_tokenizer(task.tokenizer_dir)
    if has_language_codes(tok):
        set_language_codes(tok, *task_language_codes(task, tok.src_lang, tok.tgt_lang))
    return tok


def max_length(task: NuggetTaskFields) -> int:
    """Tokens kept of a text: the tiny model's positions, else BART's 1024."""
    if task.model.source == "tiny_random":
        return task.model.tiny.max_positions
    return 1024


def nugget_examples(task: NuggetTaskFields, tok: Any, split: str) -> list[Example]:
    """The `Example` rows of ``split`` (a task's ``load_split``), tokenised by ``tok``."""
    path = task.data.split(split)
    columns = ["source", "target", "source_sentences"]
    table = pq.read_table(path, columns=columns).to_pydict()
    own = task.encoder_side == "source"
    extra = task.data.ae_extra() if split == "train" and task.objective == "ae" and own else None
    if extra is not None:  # English-only documents for autoencoding (data.mt.ae_sources)
        more = pq.read_table(extra, columns=columns).to_pydict()
        table = {k: table[k] + more[k] for k in columns}
    if split == "dev" and task.dev_examples:
        table = {k: v[: task.dev_examples] for k, v in table.items()}
    if not table["source"]:
        raise ValueError(f"training data split {split!r} at {path} has no rows")
    limit = max_length(task)
    if not own:  # the encoder reads the other language; its sentences are not recorded
        table = {"source": table["target"], "target": table["source"],
                 "source_sentences": [[] for _ in table["target"]]}
    enc = tok(table["source"], truncation=True, max_length=limit, return_offsets_mapping=True)
    targets = table[OBJECTIVES[task.objective].target_column]
    # text_target: a multilingual tokenizer (mBART-50) prefixes the labels with the code of
    # the labels' language (`task_language_codes`), not the encoder's
    dec = tok(text_target=targets, truncation=True, max_length=limit)
    return [
        Example(ids, tgt, sentence_end_positions(text, sents, offs), tuple(enc.word_ids(i)))
        for i, (ids, tgt, text, sents, offs) in enumerate(zip(
            enc["input_ids"], dec["input_ids"], table["source"],
            table["source_sentences"], enc["offset_mapping"], strict=True,
        ))
    ]


def nugget_batch(task: NuggetTaskFields, tok: Any, rows: list[Example], step: int, rank: int, train: bool,
                 punctuation: Callable[[], set[int]]) -> Batch:
    """``input_ids`` / ``attention_mask`` / ``labels`` ``[B, T]`` (+ ``boundary_mask``
    for the rule-based selectors; ``punctuation``: the chunk selector's token ids, asked
    for only by it). Deletion noise on training AE inputs, seeded by seed, step and rank."""
    rng = np.random.default_rng([task.seed, max(step, 0), rank])
    noise = task.deletion_noise if train and OBJECTIVES[task.objective].noisy else 0.0
    sources = [delete_words(e.source, e.words, noise, rng) for e in rows]
    ids, mask = pad(sources, tok.pad_token_id)
    labels, _ = pad([e.target for e in rows], IGNORE)
    batch = {"input_ids": ids, "attention_mask": mask, "labels": labels}
    if task.nugget.selector == "sentence":
        bounds = torch.zeros_like(ids, dtype=torch.bool)
        for i, e in enumerate(rows):
            bounds[i, [p for p in e.boundaries if p < ids.shape[1]]] = True
        batch["boundary_mask"] = bounds
    elif task.nugget.selector == "chunk":
        # the chunking selector takes the comma / period ending each chunk (§7.1)
        from nugget_core import token_flags

        batch["boundary_mask"] = token_flags(ids, punctuation())
    return batch


def nugget_config_of(task: NuggetTaskFields) -> NuggetConfig:
    """The task's ``nugget`` section as a `NuggetConfig` (the section has its fields)."""
    from dataclasses import asdict

    from nugget_core import NuggetConfig

    return NuggetConfig(**asdict(task.nugget))


def nugget_model(task: NuggetTaskFields, tokenizer: Callable[[], Any], init_dir: Path | None) -> NuggetModel:
    """A fresh Nugget model on the task's seq2seq model (the tiny one built on the task's
    ``tokenizer()``, or the pretrained one), or the one saved in ``init_dir`` (resume)."""
    from nugget_core import NuggetModel, TinyBartSpec, build_tiny_bart, get_nugget_model

    impl = task.model.attn_implementation
    if init_dir is not None:
        return NuggetModel.from_pretrained(init_dir, attn_implementation=impl)
    if task.model.source == "tiny_random":
        from dataclasses import asdict

        base = build_tiny_bart(tokenizer(), TinyBartSpec(**asdict(task.model.tiny)), seed=task.seed)
    else:
        from transformers import AutoModelForSeq2SeqLM

        base = AutoModelForSeq2SeqLM.from_pretrained(task.model.name_or_path, attn_implementation=impl,
                                                     trust_remote_code=False)
    return get_nugget_model(base, nugget_config_of(task))


@dataclass
class NuggetTask(NuggetTaskFields):
    """Everything model-specific the training loop needs; picklable (sent to workers)."""

    _tok: Any = field(default=None, init=False, repr=False)  # loaded once per process
    _punct: Any = field(default=None, init=False, repr=False)

    # DDP must tolerate parameters without gradient: the scorer without a learned
    # selector or residual, and the untied tiny BART's `shared` embedding, which neither
    # the (separately embedded) decoder nor the frozen encoder embedding uses.
    find_unused_parameters: bool = field(default=True, init=False)

    def __post_init__(self) -> None:
        check_fields(self)

    def tokenizer(self) -> Any:
        if self._tok is None:
            self._tok = nugget_tokenizer(self)
        return self._tok

    def language_codes(self, corpus_source: str, corpus_target: str) -> tuple[str, str]:
        """(encoder code, label code) of this task (`task_language_codes`)."""
        return task_language_codes(self, corpus_source, corpus_target)

    def nugget_config(self) -> NuggetConfig:
        return nugget_config_of(self)

    def punctuation(self) -> set[int]:
        """The chunk selector's punctuation token ids (§7.1), found once per process."""
        from nugget_core import chunk_token_ids

        if self._punct is None:
            self._punct = chunk_token_ids(self.tokenizer())
        return self._punct

    def load_split(self, split: str) -> list[Example]:
        return nugget_examples(self, self.tokenizer(), split)

    def build_model(self, init_dir: Path | None) -> nn.Module:
        """A fresh Nugget model, or the one saved in ``init_dir`` (resume)."""
        return nugget_model(self, self.tokenizer, init_dir)

    def enable_activation_checkpointing(self, model: nn.Module) -> None:
        raise checkpointing_unsupported(self)

    def collate(self, rows: list[Example], step: int, rank: int, train: bool) -> Batch:
        return nugget_batch(self, self.tokenizer(), rows, step, rank, train, self.punctuation)

    loss = staticmethod(model_loss)
    logits = staticmethod(model_logits)
    n_target_tokens = staticmethod(labelled_tokens)
    n_tokens = staticmethod(seq2seq_tokens)
    mismatch = staticmethod(mismatch_encoder_input)  # the encoder input: what the nuggets / embedding compress
    parameter_counts = staticmethod(trainable_and_frozen)

    def export(self, model: nn.Module, directory: Path) -> None:
        """``model.save_pretrained`` + the tokenizer: loadable outside Ray."""
        export_pretrained(model, directory, self.tokenizer)
