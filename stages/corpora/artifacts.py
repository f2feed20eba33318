"""Contract of the ``corpus_stats`` output: an offline corpus's size and length statistics."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from stages.artifacts.base import Source, Stored, field, locate, write_json


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
class StoredCorpusStatistics(Stored[CorpusStatistics]):
    """`CorpusStatistics` with where they were read from (`Stored`: the report names the artifact)."""

    @classmethod
    def read(cls, source: Source) -> StoredCorpusStatistics:
        return cls(CorpusStatistics.read(source), locate(source, CorpusStatistics.STAGE))
