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
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow.parquet as pq
import torch
from torch import nn

from stages.artifacts.data import MtDocuments
from stages.common.languages import has_language_codes, set_language_codes
from stages.common.padding import pad
from stages.train.batches import Example, delete_words
from stages.train.task import Seq2SeqTaskBase

if TYPE_CHECKING:
    from nugget_core import NuggetModel


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
class NuggetTask(Seq2SeqTaskBase):
    """Everything model-specific the training loop needs; picklable (sent to workers)."""

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
    _tok: Any = field(default=None, init=False, repr=False)  # loaded once per process
    _punct: Any = field(default=None, init=False, repr=False)

    # DDP must tolerate parameters without gradient: the scorer without a learned
    # selector or residual, and the untied tiny BART's `shared` embedding, which neither
    # the (separately embedded) decoder nor the frozen encoder embedding uses.
    find_unused_parameters: bool = field(default=True, init=False)

    def __post_init__(self) -> None:
        if self.objective not in OBJECTIVES:
            raise ValueError(f"Nugget objective {self.objective!r}: expected one of {sorted(OBJECTIVES)}")
        if self.encoder_side not in ENCODER_SIDES:
            raise ValueError(f"Nugget encoder_side {self.encoder_side!r}: expected one of {ENCODER_SIDES}")

    def tokenizer(self) -> Any:
        from transformers import AutoTokenizer

        if self._tok is None:
            self._tok = AutoTokenizer.from_pretrained(self.tokenizer_dir, trust_remote_code=False)
            if has_language_codes(self._tok):
                set_language_codes(self._tok, *self.language_codes(self._tok.src_lang, self._tok.tgt_lang))
        return self._tok

    def language_codes(self, corpus_source: str, corpus_target: str) -> tuple[str, str]:
        """(encoder code, label code) of this task, from the corpus's two languages (the
        tokenizer stage's ``data.mt.src_lang`` / ``tgt_lang``): the encoder's side is the
        language it reads; the labels are in that language for AE (Nugget §3.4: "English
        documents on both the source and target sides") and in the other one for MT."""
        sides = {"source": corpus_source, "target": corpus_target}
        other = "target" if self.encoder_side == "source" else "source"
        writes_own_side = OBJECTIVES[self.objective].target_column == "source"
        return sides[self.encoder_side], sides[self.encoder_side if writes_own_side else other]

    def load_split(self, split: str) -> list[Example]:
        path = self.data.split(split)
        columns = ["source", "target", "source_sentences"]
        table = pq.read_table(path, columns=columns).to_pydict()
        own = self.encoder_side == "source"
        extra = self.data.ae_extra() if split == "train" and self.objective == "ae" and own else None
        if extra is not None:  # English-only documents for autoencoding (data.mt.ae_sources)
            more = pq.read_table(extra, columns=columns).to_pydict()
            table = {k: table[k] + more[k] for k in columns}
        if split == "dev" and self.dev_examples:
            table = {k: v[: self.dev_examples] for k, v in table.items()}
        if not table["source"]:
            raise ValueError(f"training data split {split!r} at {path} has no rows")
        tok = self.tokenizer()
        limit = self._max_len()
        if not own:  # the encoder reads the other language; its sentences are not recorded
            table = {"source": table["target"], "target": table["source"],
                     "source_sentences": [[] for _ in table["target"]]}
        enc = tok(table["source"], truncation=True, max_length=limit, return_offsets_mapping=True)
        targets = table[OBJECTIVES[self.objective].target_column]
        # text_target: a multilingual tokenizer (mBART-50) prefixes the labels with the code of
        # the labels' language (`language_codes`), not the encoder's
        dec = tok(text_target=targets, truncation=True, max_length=limit)
        return [
            Example(ids, tgt, sentence_end_positions(text, sents, offs), tuple(enc.word_ids(i)))
            for i, (ids, tgt, text, sents, offs) in enumerate(zip(
                enc["input_ids"], dec["input_ids"], table["source"],
                table["source_sentences"], enc["offset_mapping"], strict=True,
            ))
        ]

    def _max_len(self) -> int:
        if self.model.source == "tiny_random":
            return self.model.tiny.max_positions
        return 1024

    def nugget_config(self) -> Any:
        from dataclasses import asdict

        from nugget_core import NuggetConfig

        return NuggetConfig(**asdict(self.nugget))  # the `nugget` section has NuggetConfig's fields

    def build_model(self, init_dir: Path | None) -> nn.Module:
        """A fresh Nugget model, or the one saved in ``init_dir`` (resume)."""
        return self.nugget_model(init_dir)

    def nugget_model(self, init_dir: Path | None) -> NuggetModel:
        """`build_model`'s model as the `nugget_core.NuggetModel` it is (`BaselineTask`
        unloads the HF model from it)."""
        from nugget_core import NuggetModel, TinyBartSpec, build_tiny_bart, get_nugget_model

        impl = self.model.attn_implementation
        if init_dir is not None:
            return NuggetModel.from_pretrained(init_dir, attn_implementation=impl)
        if self.model.source == "tiny_random":
            from dataclasses import asdict

            base = build_tiny_bart(self.tokenizer(), TinyBartSpec(**asdict(self.model.tiny)), seed=self.seed)
        else:
            from transformers import AutoModelForSeq2SeqLM

            base = AutoModelForSeq2SeqLM.from_pretrained(self.model.name_or_path, attn_implementation=impl,
                                                         trust_remote_code=False)
        return get_nugget_model(base, self.nugget_config())

    def collate(self, rows: list[Example], step: int, rank: int, train: bool) -> dict[str, torch.Tensor]:
        """``input_ids`` / ``attention_mask`` / ``labels`` ``[B, T]`` (+ ``boundary_mask``
        for the rule-based selectors)."""
        pad_id = self.tokenizer().pad_token_id
        rng = np.random.default_rng([self.seed, max(step, 0), rank])
        noise = self.deletion_noise if train and OBJECTIVES[self.objective].noisy else 0.0
        sources = [delete_words(e.source, e.words, noise, rng) for e in rows]
        ids, mask = pad(sources, pad_id)
        labels, _ = pad([e.target for e in rows], -100)
        batch = {"input_ids": ids, "attention_mask": mask, "labels": labels}
        if self.nugget.selector == "sentence":
            bounds = torch.zeros_like(ids, dtype=torch.bool)
            for i, e in enumerate(rows):
                bounds[i, [p for p in e.boundaries if p < ids.shape[1]]] = True
            batch["boundary_mask"] = bounds
        elif self.nugget.selector == "chunk":
            # the chunking selector takes the comma / period ending each chunk (§7.1)
            from nugget_core import chunk_token_ids, token_flags

            if self._punct is None:
                self._punct = chunk_token_ids(self.tokenizer())
            batch["boundary_mask"] = token_flags(ids, self._punct)
        return batch
