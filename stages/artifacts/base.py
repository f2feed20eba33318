"""What every contract shares: where an output lives and checked reading of its parts."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

from stages.framework.stage import Artifact

#: what a contract's ``read`` accepts: a stage's output (`Artifact`) or its folder
Source = Artifact | Path | str

OutputT = TypeVar("OutputT")


class ContractError(ValueError):
    """A stage output is missing a file or field its contract promises, or holds a malformed one."""


@dataclass(frozen=True)
class Location:
    """A stage output directory, with what to call it in errors."""

    stage: str
    path: Path
    key: str = ""

    def describe(self) -> str:
        key = f" (key {self.key})" if self.key else ""
        return f"output of stage {self.stage!r}{key} at {self.path}"

    def error(self, name: str, problem: str, field: str | None = None) -> ContractError:
        what = f"field {field!r} of {name!r}" if field else repr(name)
        return ContractError(f"{self.describe()}: {what} {problem}")

    def file(self, name: str) -> Path:
        target = self.path / name
        if not target.is_file():
            raise self.error(name, "is missing (not a file)")
        return target

    def folder(self, name: str) -> Path:
        target = self.path / name
        if not target.is_dir():
            raise self.error(name, "is missing (not a directory)")
        return target

    def json(self, name: str) -> Any:
        text = self.file(name).read_text()
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise self.error(name, f"is not valid JSON ({exc})") from exc

    def jsonl(self, name: str, limit: int = 0) -> Iterator[Any]:
        """The first ``limit`` (0 = all) objects of the JSON-lines file ``name``, parsed as
        they are read (a file too large for memory streams); a bad line is named."""
        with self.file(name).open(encoding="utf-8") as lines:
            for n, line in enumerate(lines):
                if limit and n == limit:
                    return
                try:
                    yield json.loads(line)
                except json.JSONDecodeError as exc:
                    raise self.error(name, f"line {n + 1} is not valid JSON ({exc})") from exc


def locate(source: Source, stage: str) -> Location:
    """The directory of ``source`` (a completed artifact, or a plain output directory)."""
    if isinstance(source, Artifact):
        return Location(source.stage, Path(source.path), source.key)
    return Location(stage, Path(source))


@dataclass(frozen=True)
class Stored(Generic[OutputT]):
    """A stage output read through its contract (``output``) with where it was read from
    (``where``: the producing stage, its store key, "" for a plain directory, and its
    folder), for a reader that names the artifact behind each number and links its files
    (the report). Its subclasses have no ``STAGE``: an inputs class reads them with
    ``produced_by``."""

    output: OutputT
    where: Location


_MISSING = object()


def field(where: Location, name: str, obj: Any, key: str, kind: type | tuple[type, ...] = object,
          default: Any = _MISSING) -> Any:
    """``obj[key]`` of file ``name``, checked to be a ``kind``; a `ContractError` otherwise."""
    if not isinstance(obj, dict):
        raise where.error(name, f"is malformed: expected a JSON object, got {type(obj).__name__}")
    if key not in obj:
        if default is not _MISSING:
            return default
        raise where.error(name, "is missing", key)
    value = obj[key]
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        value = float(value)
    if not isinstance(value, kind):
        expected = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        raise where.error(name, f"is malformed: expected {expected}, got {value!r}", key)
    return value


def records(where: Location, name: str, rows: Any, required: Sequence[tuple[str, Any]],
            what: str = "records") -> list[dict[str, Any]]:
    """``rows`` of file ``name``, checked to be a list of JSON objects that each hold the
    ``required`` ``(key, type)`` fields; a `ContractError` naming ``what`` otherwise."""
    if not isinstance(rows, list):
        raise where.error(name, f"is malformed: expected a list of {what}")
    for row in rows:
        for key, kind in required:
            field(where, name, row, key, kind)
    return rows


def write_json(path: Path, obj: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False) + "\n")
    return path
