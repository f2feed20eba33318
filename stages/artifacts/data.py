"""Contracts of the data group's outputs (tokenizer, build_mt_docs, build_pi / build_rr,
prepare_lm, build_lm, corpus_stats, build_nugget_lm; the RE study's data: `stages.artifacts.restorable`)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from stages.artifacts.base import Location, Stored, field, locate, write_json
from stages.framework.stage import Artifact

Source = Artifact | Path | str


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
class BaseLM:
    """``prepare_lm``: the Nugget2D base LMs with their tokenizer, HF folders, and
    ``roles.json`` naming each experiment's folder: ``lm`` (language modelling, the
    autoregressive model and its scorer's compressor: ``model/``) and ``chat`` (QA and
    summarisation: ``chat/`` when ``model.lm.chat_name_or_path`` names another
    checkpoint, else ``model/``). Every role shares one tokenizer (prepare_lm checks)."""

    STAGE: ClassVar[str] = "prepare_lm"
    DIR: ClassVar[str] = "model"
    CHAT_DIR: ClassVar[str] = "chat"
    ROLES_FILE: ClassVar[str] = "roles.json"
    ROLES: ClassVar[tuple[str, ...]] = ("lm", "chat")
    path: Path
    role: str = "lm"

    @classmethod
    def folder(cls, out: Path) -> Path:
        """Where the producer saves the model and tokenizer."""
        return out / cls.DIR

    @classmethod
    def write_roles(cls, out: Path, chat_dir: str = DIR) -> Path:
        return write_json(out / cls.ROLES_FILE, {"lm": cls.DIR, "chat": chat_dir})

    @classmethod
    def read(cls, source: Source, role: str = "lm") -> BaseLM:
        """The base LM of experiment ``role`` (an output without ``roles.json``: ``model/``
        for every role)."""
        if role not in cls.ROLES:
            raise ValueError(f"base LM role {role!r}: expected one of {cls.ROLES}")
        where = locate(source, cls.STAGE)
        roles = where.json(cls.ROLES_FILE) if (where.path / cls.ROLES_FILE).is_file() else {}
        return cls(where.folder(field(where, cls.ROLES_FILE, roles, role, str, default=cls.DIR)), role)

    def tokenizer(self) -> Any:
        from transformers import AutoTokenizer

        return AutoTokenizer.from_pretrained(str(self.path), trust_remote_code=False)

    def causal_lm(self, precision: str = "fp32") -> Any:
        """The base LM on the CPU with its weights in ``precision`` (``fp32`` / ``bf16``)."""
        from transformers import AutoModelForCausalLM

        from stages.common.device import dtype_of

        return AutoModelForCausalLM.from_pretrained(str(self.path), dtype=dtype_of(precision), trust_remote_code=False)


@dataclass(frozen=True)
class PreparedLM:
    """``prepare_lm``'s whole output, as a stage that reads it sees it: the base LM of each
    role (`BaseLM`; a trained Nugget2D model names the role it was trained on)."""

    STAGE: ClassVar[str] = BaseLM.STAGE
    path: Path

    @classmethod
    def read(cls, source: Source) -> PreparedLM:
        BaseLM.read(source)  # the folder every role falls back to is there
        return cls(locate(source, cls.STAGE).path)

    def base(self, role: str = "lm") -> BaseLM:
        """The base LM of experiment ``role`` (`BaseLM.read`)."""
        return BaseLM.read(self.path, role)


@dataclass(frozen=True)
class LMRecords:
    """``build_lm``: ``lm_<corpus>.parquet`` segments (``split``, ``distant``, ``recent``),
    ``continuation.parquet`` triples and ``<task>.jsonl`` records (``qa``,
    ``summarization``: ``id``, ``split``, ``document``, ``instruction``, ``answer``)."""

    STAGE: ClassVar[str] = "build_lm"
    path: Path

    @staticmethod
    def segments_file(out: Path, corpus: str) -> Path:
        return out / f"lm_{corpus}.parquet"

    @staticmethod
    def continuation_file(out: Path) -> Path:
        return out / "continuation.parquet"

    @staticmethod
    def records_file(out: Path, task: str) -> Path:
        return out / f"{task}.jsonl"

    @classmethod
    def read(cls, source: Source) -> LMRecords:
        where = locate(source, cls.STAGE)
        if not where.path.is_dir():
            raise where.error(".", "is missing (no output directory)")
        return cls(where.path)

    def _where(self) -> Location:
        return Location(self.STAGE, self.path)

    def segments(self, corpus: str) -> Path:
        return self._where().file(self.segments_file(Path(), corpus).name)

    def stand_ins(self) -> dict[str, str]:
        """Per dataset (``qa``, ``summarization``, ``wiki``, ``pile``), what stands in for
        the paper's data in this build (``stats.json``; empty for the paper's own data or
        an output without stats)."""
        where = self._where()
        if not (self.path / "stats.json").is_file():
            return {}
        return dict(field(where, "stats.json", where.json("stats.json"), "stand_ins", dict, default={}))

    def continuation(self) -> Path:
        return self._where().file(self.continuation_file(Path()).name)

    def continuation_windows(self, split: str) -> list[list[int]]:
        """The continuation triples of ``split`` as whole windows, ``doc + prompt + answer``
        (the documents of the autoencoding study, Nugget2D §4)."""
        import pyarrow.parquet as pq

        path = self.continuation()
        rows = [r for r in pq.read_table(path).to_pylist() if r["split"] == split]
        if not rows:
            raise ValueError(f"{path}: no continuation windows in split {split!r}")
        return [r["doc"] + r["prompt"] + r["answer"] for r in rows]

    def records(self, task: str) -> Path:
        return self._where().file(self.records_file(Path(), task).name)


@dataclass(frozen=True)
class CorpusStatistics:
    """``corpus_stats``: ``stats.json`` (numbers, ``top_words`` [[word, count]], ``source``)."""

    STAGE: ClassVar[str] = "corpus_stats"
    FILE: ClassVar[str] = "stats.json"
    stats: dict[str, Any]

    def write(self, out: Path) -> Path:
        return write_json(out / self.FILE, self.stats)

    @classmethod
    def read(cls, source: Source) -> CorpusStatistics:
        where = locate(source, cls.STAGE)
        stats = where.json(cls.FILE)
        field(where, cls.FILE, stats, "source", str)
        field(where, cls.FILE, stats, "top_words", list, default=[])
        return cls(stats)

    @property
    def source(self) -> str:
        return self.stats["source"]


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


@dataclass(frozen=True)
class StoredCorpusStatistics(Stored[CorpusStatistics]):
    """`CorpusStatistics` with where they were read from (`Stored`: the report names the artifact)."""

    @classmethod
    def read(cls, source: Source) -> StoredCorpusStatistics:
        return cls(CorpusStatistics.read(source), locate(source, CorpusStatistics.STAGE))
