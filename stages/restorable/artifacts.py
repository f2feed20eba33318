"""Contracts of the RE study's outputs (docs/restorable.md): its texts to restore
(``build_re_data``), retrieval queries (``build_re_retrieval``) and table 10's classification
tasks (``build_re_downstream``), its restoration
models (``train_re``) and bi-encoders (``train_re_retrieval``), with their readers."""

from __future__ import annotations

import csv
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, NamedTuple

from stages.artifacts.base import Location, Source, field, locate
from stages.artifacts.systems import SystemsOutput


def passage_input(title: str, text: str) -> str:
    """The passage as the bi-encoders read it: ``"title. text"`` (``text`` alone without a
    title); DPR's encoder takes the title too, its hit rule only the text."""
    return f"{title}. {text}" if title else text


class Passage(NamedTuple):
    """One line of the passage collection (``title`` "" when the file has none)."""

    id: str
    text: str
    title: str

    @property
    def encoded(self) -> str:
        """What the passage tower reads (`passage_input`)."""
        return passage_input(self.title, self.text)


@dataclass(frozen=True)
class RestorationTexts:
    """``build_re_data``: the RE restoration texts (RE §4.1). Per sentence count k,
    ``n<k>/train.jsonl`` and ``n<k>/dev.jsonl``, one example per line (``id`` =
    ``<document>:<first sentence>``, ``text``, ``sentences``), and ``stats.json``
    (``source``; ``stand_in``: what stands in for C4 RealNewsLike, "" for C4 itself;
    ``counts``: per k, ``train`` / ``dev`` examples, ``mean_words``, ``dropped_long``,
    ``dropped_tail``; ``splitter``: punkt | rules, ``data.re.sentence_splitter``), and
    with Punkt ``punkt.json`` (the documents it learned from, its abbreviations,
    collocations and sentence starters)."""

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

    def count(self, split: str) -> int:
        """Queries of ``split`` (``stats.json``'s counts, written with the files)."""
        where = Location(self.STAGE, self.path)
        return field(where, self.STATS, field(where, self.STATS, self.stats, "counts", dict), split, int)

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

    def passage_lines(self) -> Iterator[Passage]:
        """Every passage, streamed (DPR's file: ``id, text, title`` with a header line). The
        title stays apart: the towers read it (`Passage.encoded`), DPR's hit rule does not.
        Read as DPR reads it, tab-separated CSV: ``psgs_w100.tsv`` quotes every text
        (``"Aaron Aaron ( or ; ""Ahärôn"") is ..."``), and the quotes are not the text's."""
        with self.passages.open(encoding="utf-8", newline="") as lines:
            for n, parts in enumerate(csv.reader(lines, delimiter="\t")):
                if n == 0 and parts and parts[0] == "id":
                    continue  # DPR's header
                if len(parts) < 2 or not parts[1]:
                    raise ValueError(f"{self.passages}:{n + 1}: not 'id<TAB>text[<TAB>title]'")
                yield Passage(parts[0], parts[1], parts[2] if len(parts) > 2 else "")

    @classmethod
    def write_passages(cls, output_dir: Path, passages: Iterable[tuple[str, str]]) -> int:
        """``passages.tsv`` of (id, text) pairs in the CSV quoting `passage_lines` reads (a
        text that starts with a quote stays whole); returns how many."""
        n = 0
        with open(output_dir / cls.PASSAGES, "w", encoding="utf-8", newline="") as fh:
            writer = csv.writer(fh, delimiter="\t", lineterminator="\n")
            for pid, text in passages:
                writer.writerow([pid, " ".join(text.split())])
                n += 1
        return n


@dataclass(frozen=True)
class DownstreamTasks:
    """``build_re_downstream``: RE table 10's sentence-classification tasks. Per task
    ``tasks/<task>/{train,test}.jsonl`` (and ``dev.jsonl`` where a dev split picks the probe's
    regularisation), one ``{"id", "text", "label"}`` per line (labels as names; ids unique within
    the task: what pairs encoders over the same test sentences); ``stats.json``:
    ``source``, ``stand_in`` ("" for the published data) and per task ``labels``, ``selection``
    (``dev`` | ``cv``: cross-validation on train), ``origin`` and ``counts`` per split."""

    STAGE: ClassVar[str] = "build_re_downstream"
    STATS: ClassVar[str] = "stats.json"
    SELECTIONS: ClassVar[tuple[str, ...]] = ("dev", "cv")
    path: Path
    source: str
    stand_in: str
    tasks: dict[str, dict[str, Any]]

    @staticmethod
    def file_of(out: Path, task: str, split: str) -> Path:
        return out / "tasks" / task / f"{split}.jsonl"

    @classmethod
    def read(cls, source: Source) -> DownstreamTasks:
        where = locate(source, cls.STAGE)
        stats = where.json(cls.STATS)
        tasks = field(where, cls.STATS, stats, "tasks", dict)
        if not tasks:
            raise where.error(cls.STATS, "is malformed: no task", "tasks")
        for name, entry in tasks.items():
            labels = field(where, cls.STATS, entry, "labels", list)
            selection = field(where, cls.STATS, entry, "selection", str)
            if len(labels) < 2 or selection not in cls.SELECTIONS:
                raise where.error(cls.STATS, f"is malformed: task {name!r} has {len(labels)} labels, selection "
                                  f"{selection!r} (expected >= 2 labels and one of {cls.SELECTIONS})", "tasks")
            field(where, cls.STATS, entry, "origin", str)
            for split in cls.splits_of(entry):
                where.file(str(cls.file_of(Path(), name, split)))
        return cls(where.path, field(where, cls.STATS, stats, "source", str),
                   field(where, cls.STATS, stats, "stand_in", str), tasks)

    @staticmethod
    def splits_of(entry: dict[str, Any]) -> tuple[str, ...]:
        return ("train", "dev", "test") if entry["selection"] == "dev" else ("train", "test")

    def rows(self, task: str, split: str) -> list[dict[str, Any]]:
        """Every row of ``split`` of ``task``, each checked: a text and one of the task's labels."""
        if task not in self.tasks:
            raise ValueError(f"{self.path}: no task {task!r} (built: {sorted(self.tasks)})")
        if split not in self.splits_of(self.tasks[task]):
            raise ValueError(f"{self.path}: task {task!r} has no {split!r} split")
        where, name = Location(self.STAGE, self.path), str(self.file_of(Path(), task, split))
        labels = set(self.tasks[task]["labels"])
        out = []
        for n, row in enumerate(where.jsonl(name), 1):
            if not isinstance(row.get("id"), str) or not isinstance(row.get("text"), str) or row.get("label") not in labels:
                raise where.error(name, f"line {n} lacks an id or a text, or has a label outside the task's "
                                  f"({row.get('label')!r})")
            out.append(row)
        return out


def restoration_floor_key(sentences: int, metric: str) -> str:
    """``eval_re_restoration``'s `EvalTable.floors` key of ``metric``'s floor on the texts of
    ``sentences`` sentences (each sentence count has its own texts, so its own floors)."""
    return f"n{sentences}/{metric}"


def ignored_inputs(trained: SystemsOutput) -> dict[str, str]:
    """Per system of ``trained`` whose model ignores its input (its trainer state's `InputUse`,
    `stages.artifacts.trainer_state`), why; a system that uses it, or was not measured, is absent."""
    return {r["system"]: reason for r, s in zip(trained.systems, trained.training(), strict=True)
            if s.input_use is not None and (reason := s.input_use.reason())}


@dataclass(frozen=True)
class TrainedRestorable(SystemsOutput):
    """``train_re``: ``systems.json`` (one record per system: ``system``, ``sentences``,
    ``config`` (RE table 1: a-d), ``pooling`` (cls | mean), ``decoder`` (input | cross |
    gating), ``freeze_pretrained``, ``extra_layers``, ``paper_row`` (``k|config|pooling|decoder``,
    its row of RE table 8), ``base`` (the pretrained model it started from), ``max_tokens``
    (truncation of its texts, in tokens), ``model_dir``
    relative to the output, ``dev_loss``) and ``systems/<name>/model/``
    (``nugget_core.restorable.RestorableModel.from_pretrained`` + tokenizer)."""

    STAGE: ClassVar[str] = "train_re"

    @classmethod
    def read(cls, source: Source) -> TrainedRestorable:
        where, systems = cls.read_records(source, [
            ("sentences", int), ("config", str), ("pooling", str), ("decoder", str), ("freeze_pretrained", bool),
            ("extra_layers", int), ("paper_row", str), ("base", str), ("max_tokens", int),
        ])
        return cls(where.path, systems)

    def find(self, **match: Any) -> list[dict[str, Any]]:
        """The records whose fields equal ``match`` (e.g. ``config="a", sentences=1``)."""
        return [r for r in self.systems if all(r.get(k) == v for k, v in match.items())]

    def load(self, record: dict[str, Any], device: Any = "cpu", precision: str = "fp32") -> Any:
        """The system's `nugget_core.restorable.RestorableModel`, eval mode, on ``device``."""
        from nugget_core.restorable import RestorableModel
        from stages.common.device import place_model

        return place_model(RestorableModel.from_pretrained(self.model_dir(record)), device, precision)


@dataclass(frozen=True)
class TrainedRetrieval(SystemsOutput):
    """``train_re_retrieval``: ``systems.json`` (one record per bi-encoder: ``system``,
    ``paper_row`` of RE table 9 (``pretrained|<layers>`` or ``freeze|grad|<k>|<layers>``),
    ``init``, ``sentences``, ``config``, ``max_query_tokens``, ``max_passage_tokens``,
    ``model_dir``, ``dev_loss``) and ``systems/<name>/model/{query,passage}/`` (each a
    ``RestorableModel`` folder whose encoder is that tower)."""

    STAGE: ClassVar[str] = "train_re_retrieval"

    @classmethod
    def read(cls, source: Source) -> TrainedRetrieval:
        where, systems = cls.read_records(source, [
            ("paper_row", str), ("init", str), ("max_query_tokens", int), ("max_passage_tokens", int),
        ], subfolders=("query", "passage"))
        return cls(where.path, systems)

    def towers(self, record: dict[str, Any], device: Any = "cpu", precision: str = "fp32") -> tuple[Any, Any]:
        """The (query, passage) encoders of a bi-encoder, eval mode, on ``device``."""
        from nugget_core.restorable import RestorableModel
        from stages.common.device import place_model

        return tuple(place_model(RestorableModel.encoder_from_pretrained(self.model_dir(record) / t), device, precision)
                     for t in ("query", "passage"))

    def tokenizer_dir(self, record: dict[str, Any]) -> Path:
        return self.model_dir(record) / "query"  # both towers hold the same tokenizer
