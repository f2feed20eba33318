"""Contracts of the Nugget study's data outputs: the seq2seq tokenizer (``tokenizer``), the MT
documents (``build_mt_docs``), the PI / RR similarity datasets (``build_pi``, ``build_rr``) and the
Nugget LM corpus (``build_nugget_lm``)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from stages.artifacts.base import Location, Source, Stored, field, locate


@dataclass(frozen=True)
class TokenizerFolder:
    """``tokenizer``: the seq2seq tokenizer, a HF ``save_pretrained`` folder."""

    STAGE: ClassVar[str] = "tokenizer"
    DIR: ClassVar[str] = "tokenizer"
    path: Path

    @classmethod
    def write(cls, out: Path, tokenizer: Any) -> TokenizerFolder:
        tokenizer.save_pretrained(str(out / cls.DIR))
        return cls(out / cls.DIR)

    @classmethod
    def read(cls, source: Source) -> TokenizerFolder:
        return cls(locate(source, cls.STAGE).folder(cls.DIR))


@dataclass(frozen=True)
class MtDocuments:
    """``build_mt_docs``: ``<split>.parquet`` per split (columns ``source``, ``target``,
    ``source_sentences``, ...)."""

    STAGE: ClassVar[str] = "build_mt_docs"
    REQUIRED: ClassVar[tuple[str, ...]] = ("train", "dev")
    AE_SPLIT: ClassVar[str] = "train_ae"  # extra English-only AE training documents (optional)
    path: Path

    @staticmethod
    def split_file(out: Path, split: str) -> Path:
        """Where the producer writes ``split``."""
        return out / f"{split}.parquet"

    @classmethod
    def read(cls, source: Source) -> MtDocuments:
        where = locate(source, cls.STAGE)
        for split in cls.REQUIRED:
            where.file(f"{split}.parquet")
        return cls(where.path)

    def split(self, name: str) -> Path:
        return Location(self.STAGE, self.path).file(f"{name}.parquet")

    def ae_extra(self) -> Path | None:
        """``train_ae.parquet`` when the producer wrote one (``data.mt.ae_sources``), else None."""
        path = self.split_file(self.path, self.AE_SPLIT)
        return path if path.is_file() else None


@dataclass(frozen=True)
class SimilarityDataset:
    """``build_pi`` / ``build_rr``: ``tasks.jsonl`` + ``docs.tsv`` (and the authors'
    ``nugget-data/`` layout); the format is `stages.corpora.nugget_data`'s."""

    STAGE: ClassVar[str] = "build_pi"
    FILES: ClassVar[tuple[str, ...]] = ("tasks.jsonl", "docs.tsv")
    path: Path

    @classmethod
    def read(cls, source: Source, stage: str = STAGE) -> SimilarityDataset:
        where = locate(source, stage)
        for name in cls.FILES:
            where.file(name)
        return cls(where.path)


@dataclass(frozen=True)
class TokenDocuments:
    """The documents of one split of `NuggetLMCorpus` as flat arrays: ``docs[i]`` is the
    token ids of document ``i`` (a NumPy view, no copy: WikiText-103's train split is
    ~10^8 tokens), `word_start` / `oov` its flags."""

    ids: Any  # np.ndarray [tokens] int64 (stored as int32)
    starts: Any  # np.ndarray [tokens] bool
    oovs: Any  # np.ndarray [tokens] bool
    offsets: Any  # np.ndarray [docs + 1] int64

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def __getitem__(self, i: int) -> Any:
        return self.ids[self.offsets[i] : self.offsets[i + 1]]

    def lengths(self) -> list[int]:
        return [int(n) for n in self.offsets[1:] - self.offsets[:-1]]

    def word_start(self, i: int) -> Any:
        return self.starts[self.offsets[i] : self.offsets[i + 1]]

    def oov(self, i: int) -> Any:
        return self.oovs[self.offsets[i] : self.offsets[i + 1]]


@dataclass(frozen=True)
class NuggetLMCorpus:
    """``build_nugget_lm``: ``{train,dev,test}.parquet``, one row per article with ``ids``
    (the Nugget tokenizer's, no special tokens), ``word_start`` and ``oov`` (per token:
    `stages.corpora.tokens.word_flags`), and ``stats.json`` (``source``, ``stand_in``: what
    stands in for WikiText-103, "" for WikiText-103 itself)."""

    STAGE: ClassVar[str] = "build_nugget_lm"
    COLUMNS: ClassVar[tuple[str, ...]] = ("ids", "word_start", "oov")
    path: Path
    source: str
    stand_in: str

    @staticmethod
    def split_file(out: Path, split: str) -> Path:
        return out / f"{split}.parquet"

    @classmethod
    def read(cls, source: Source) -> NuggetLMCorpus:
        where = locate(source, cls.STAGE)
        stats = where.json("stats.json")
        for split in ("train", "dev", "test"):
            where.file(f"{split}.parquet")
        return cls(where.path, field(where, "stats.json", stats, "source", str),
                   field(where, "stats.json", stats, "stand_in", str))

    def token_ids(self, split: str) -> Iterator[Any]:
        """The token ids of ``split``, a NumPy array per stored batch of articles (only the
        ``ids`` column is read: the train split's unigram counts, `stages.common.degenerate`)."""
        import pyarrow.parquet as pq

        path = Location(self.STAGE, self.path).file(f"{split}.parquet")
        for batch in pq.ParquetFile(path).iter_batches(columns=["ids"]):
            yield batch.column(0).flatten().to_numpy(zero_copy_only=False)

    def articles(self, split: str) -> Iterator[Any]:
        """The token ids of each article of ``split`` (a NumPy array each), read a stored batch at a
        time: what an n-gram model counts (no n-gram spans two articles, `stages.common.ngram`)."""
        import pyarrow.parquet as pq

        path = Location(self.STAGE, self.path).file(f"{split}.parquet")
        for batch in pq.ParquetFile(path).iter_batches(columns=["ids"]):
            column = batch.column(0)
            offsets, values = column.offsets.to_numpy(), column.values.to_numpy(zero_copy_only=False)
            for start, end in zip(offsets[:-1], offsets[1:], strict=True):
                yield values[start:end]

    def documents(self, split: str, limit: int = 0) -> TokenDocuments:
        """The first ``limit`` (0 = all) documents of ``split``."""
        import numpy as np
        import pyarrow.parquet as pq

        path = Location(self.STAGE, self.path).file(f"{split}.parquet")
        table = pq.read_table(path, columns=list(self.COLUMNS))
        if limit:
            table = table.slice(0, limit)
        if table.num_rows == 0:
            raise ValueError(f"{path}: split {split!r} has no documents")

        def flat(name: str) -> Any:
            return table.column(name).combine_chunks().flatten().to_numpy(zero_copy_only=False)

        offsets = table.column("ids").combine_chunks().offsets.to_numpy().astype(np.int64)
        return TokenDocuments(flat("ids").astype(np.int64), flat("word_start").astype(bool), flat("oov").astype(bool),
                              offsets - offsets[0])  # a slice's offsets start where it does


@dataclass(frozen=True)
class StoredSimilarityDataset(Stored[SimilarityDataset]):
    """A `SimilarityDataset` (``build_pi`` / ``build_rr``; no ``STAGE`` of its own: read it
    with ``produced_by``) with where it was read from (`Stored`), for results that name the
    data they were computed on (``eval_similarity``'s ``data`` column)."""

    @classmethod
    def read(cls, source: Source, stage: str = SimilarityDataset.STAGE) -> StoredSimilarityDataset:
        return cls(SimilarityDataset.read(source, stage), locate(source, stage))
