"""Contracts of the data group's outputs (tokenizer, build_mt_docs, build_pi / build_rr,
prepare_lm, build_lm, corpus_stats, build_nugget_lm, build_re_data)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from stages.artifacts.base import Location, field, locate, write_json
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
    ``nugget-data/`` layout); the format is `stages.data.nugget_data`'s."""

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

        return AutoTokenizer.from_pretrained(str(self.path))

    def causal_lm(self, precision: str = "fp32") -> Any:
        """The base LM on the CPU with its weights in ``precision`` (``fp32`` / ``bf16``)."""
        from transformers import AutoModelForCausalLM

        from stages.common.device import dtype_of

        return AutoModelForCausalLM.from_pretrained(str(self.path), dtype=dtype_of(precision))


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
    `stages.data.tokens.word_flags`), and ``stats.json`` (``source``, ``stand_in``: what
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
class RestorationTexts:
    """``build_re_data``: the RE restoration texts (RE §4.1). Per sentence count k,
    ``n<k>/train.jsonl`` and ``n<k>/dev.jsonl``, one example per line (``id`` =
    ``<document>:<first sentence>``, ``text``, ``sentences``), and ``stats.json``
    (``source``; ``stand_in``: what stands in for C4 RealNewsLike, "" for C4 itself;
    ``counts``: per k, ``train`` / ``dev`` examples, ``mean_words``, ``dropped_long``,
    ``dropped_tail``)."""

    STAGE: ClassVar[str] = "build_re_data"
    SPLITS: ClassVar[tuple[str, ...]] = ("train", "dev")
    STATS: ClassVar[str] = "stats.json"
    COUNT_FIELDS: ClassVar[tuple[tuple[str, type | tuple[type, ...]], ...]] = (
        ("train", int), ("dev", int), ("mean_words", (int, float)), ("dropped_long", int), ("dropped_tail", int))
    path: Path
    source: str
    stand_in: str
    counts: list[int]
    stats: dict[str, Any]

    @staticmethod
    def file_of(out: Path, count: int, split: str) -> Path:
        """Where the producer writes the ``split`` examples of ``count`` sentences."""
        return out / f"n{count}" / f"{split}.jsonl"

    @classmethod
    def read(cls, source: Source) -> RestorationTexts:
        where = locate(source, cls.STAGE)
        stats = where.json(cls.STATS)
        per_count = field(where, cls.STATS, stats, "counts", dict)
        counts = []
        for key, entry in per_count.items():
            if not key.isdigit() or int(key) < 1:
                raise where.error(cls.STATS, f"is malformed: sentence count {key!r} is not a positive integer",
                                  "counts")
            for name, kind in cls.COUNT_FIELDS:
                field(where, cls.STATS, entry, name, kind)
            for split in cls.SPLITS:
                where.file(str(cls.file_of(Path(), int(key), split)))
            counts.append(int(key))
        if not counts:
            raise where.error(cls.STATS, "is malformed: no sentence count", "counts")
        return cls(where.path, field(where, cls.STATS, stats, "source", str),
                   field(where, cls.STATS, stats, "stand_in", str), sorted(counts), stats)

    def split_file(self, count: int, split: str) -> Path:
        """The examples of ``split`` (train / dev) with ``count`` sentences each."""
        if count not in self.counts:
            raise ValueError(f"{self.path}: no examples of {count} sentences (built: {self.counts})")
        if split not in self.SPLITS:
            raise ValueError(f"{self.path}: split {split!r} is not one of {self.SPLITS}")
        return Location(self.STAGE, self.path).file(str(self.file_of(Path(), count, split)))

    def examples(self, count: int, split: str, limit: int = 0) -> Iterator[dict[str, Any]]:
        """The first ``limit`` (0 = all) examples of ``split`` with ``count`` sentences, read
        as they are needed (C4's train files do not fit in memory)."""
        path = self.split_file(count, split)
        where, name = Location(self.STAGE, self.path), str(path.relative_to(self.path))
        for ex in where.jsonl(name, limit):
            field(where, name, ex, "text", str)
            yield ex

    def texts(self, count: int, split: str, limit: int = 0) -> list[str]:
        """The ``text`` of the first ``limit`` (0 = all) examples of ``split``."""
        return [ex["text"] for ex in self.examples(count, split, limit)]


@dataclass(frozen=True)
class RetrievalData:
    """``build_re_retrieval``: the passage-retrieval data of the RE study (RE §4.4).

    ``train.jsonl`` / ``dev.jsonl``: per query ``{"query", "positive", "negatives": [...]}``
    (texts; negatives are hard negatives); ``test.jsonl``: per held-out query ``{"id",
    "query", "positive_ids": [...], "answers": [...]}``; the passage collection, one
    ``id<TAB>text`` per line: ``passages.tsv`` in the output, or (Natural Questions) DPR's
    Wikipedia file named by ``stats.json``'s ``passages_file`` (read in place, 21M lines);
    ``stats.json``: ``source``, ``stand_in``, ``match`` (``id``: a hit is a passage of
    ``positive_ids``; ``answer``: a passage containing an answer string, DPR's rule),
    ``passages_file`` ("" = ``passages.tsv``) and the counts."""

    STAGE: ClassVar[str] = "build_re_retrieval"
    SPLITS: ClassVar[tuple[str, ...]] = ("train", "dev", "test")
    STATS: ClassVar[str] = "stats.json"
    PASSAGES: ClassVar[str] = "passages.tsv"
    MATCHES: ClassVar[tuple[str, ...]] = ("id", "answer")
    path: Path
    source: str
    stand_in: str
    match: str
    passages: Path
    stats: dict[str, Any]

    @classmethod
    def read(cls, source: Source) -> RetrievalData:
        where = locate(source, cls.STAGE)
        stats = where.json(cls.STATS)
        for split in cls.SPLITS:
            where.file(f"{split}.jsonl")
        match = field(where, cls.STATS, stats, "match", str)
        if match not in cls.MATCHES:
            raise where.error(cls.STATS, f"has match {match!r}, not one of {cls.MATCHES}", "match")
        external = field(where, cls.STATS, stats, "passages_file", str)
        passages = Path(external) if external else where.file(cls.PASSAGES)
        if not passages.is_file():
            raise where.error(cls.STATS, f"names passages_file {external!r}, which is not a file", "passages_file")
        return cls(where.path, field(where, cls.STATS, stats, "source", str),
                   field(where, cls.STATS, stats, "stand_in", str), match, passages, stats)

    def rows(self, split: str, limit: int = 0) -> Iterator[dict[str, Any]]:
        """The first ``limit`` (0 = all) queries of ``split``, checked as they are read."""
        need = {"test": ("id", "query", "positive_ids", "answers")}.get(split, ("query", "positive", "negatives"))
        name = f"{split}.jsonl"
        where = Location(self.STAGE, self.path)
        for n, row in enumerate(where.jsonl(name, limit)):
            missing = [k for k in need if k not in row]
            if missing:
                raise where.error(name, f"line {n + 1} lacks {missing}")
            yield row

    def passage_lines(self) -> Iterator[tuple[str, str]]:
        """``(id, text)`` of every passage, streamed (DPR's file: ``id, text, title`` with a
        header line; the title joins the text as DPR encodes it)."""
        with self.passages.open(encoding="utf-8") as lines:
            for n, line in enumerate(lines):
                parts = line.rstrip("\n").split("\t")
                if n == 0 and parts[0] == "id":
                    continue  # DPR's header
                if len(parts) < 2 or not parts[1]:
                    raise ValueError(f"{self.passages}:{n + 1}: not 'id<TAB>text[<TAB>title]'")
                yield parts[0], (f"{parts[2]}. {parts[1]}" if len(parts) > 2 and parts[2] else parts[1])
