"""JSON persistence shared by the method configs (`NuggetConfig`, `Nugget2DConfig`,
`BottleneckConfig`): one file per config in a model folder, enums stored as their
values, unknown fields refused on load (a config written by a newer version must not
load silently with knobs dropped)."""

from __future__ import annotations

import dataclasses
import json
from enum import Enum
from pathlib import Path
from typing import Any, ClassVar, TypeVar

T = TypeVar("T", bound="JsonConfig")


class JsonConfig:
    """Mixin for dataclass configs; subclasses set ``file_name``."""

    file_name: ClassVar[str]

    def to_dict(self) -> dict[str, Any]:
        out = dataclasses.asdict(self)  # type: ignore[call-overload]
        return {k: v.value if isinstance(v, Enum) else v for k, v in out.items()}

    @classmethod
    def from_dict(cls: type[T], data: dict[str, Any]) -> T:
        known = {f.name for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"{cls.__name__}: unknown field(s) {unknown}; known: {sorted(known)}")
        return cls(**data)

    def save(self, directory: str | Path) -> Path:
        path = Path(directory) / self.file_name
        path.write_text(json.dumps(self.to_dict(), indent=2, sort_keys=True) + "\n")
        return path

    @classmethod
    def load(cls: type[T], directory: str | Path) -> T:
        return cls.from_dict(json.loads((Path(directory) / cls.file_name).read_text()))

    @classmethod
    def load_optional(cls: type[T], directory: str | Path) -> T | None:
        """`load`, or None when ``directory`` has no such file (an optional record)."""
        return cls.load(directory) if (Path(directory) / cls.file_name).is_file() else None
