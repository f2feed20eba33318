"""`SystemsOutput`: the contract shared by stages that train several systems in one
output (``systems.json`` + ``systems/<name>/``, each with its fit's ``trainer_state.json``)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from stages.artifacts.base import Location, locate, records, write_json
from stages.artifacts.trainer_state import TRAINER_STATE, TrainingSummary, read_summary
from stages.framework.stage import Artifact


@dataclass(frozen=True)
class SystemsOutput:
    """An output of several trained systems: ``systems.json`` (one record per system, with
    ``system`` and ``model_dir`` relative to the output) and ``systems/<name>/``."""

    FILE: ClassVar[str] = "systems.json"
    STAGE: ClassVar[str] = ""  # the producing stage (each subclass)
    path: Path
    systems: list[dict[str, Any]]

    @classmethod
    def read_records(cls, source: Artifact | Path | str, fields: list[tuple[str, type]],
                     subfolders: tuple[str, ...] = ("",)) -> tuple[Location, list[dict[str, Any]]]:
        """``systems.json`` of ``source`` checked: every record has ``system``, ``fields`` and
        ``model_dir``, whose ``subfolders`` ("" = the folder itself) exist."""
        where = locate(source, cls.STAGE)
        systems = records(where, cls.FILE, where.json(cls.FILE), [("system", str), *fields, ("model_dir", str)],
                          what="system records")
        for r in systems:
            for sub in subfolders:
                where.folder(f"{r['model_dir']}/{sub}" if sub else r["model_dir"])
        return where, systems

    @staticmethod
    def system_dir(out: Path, name: str) -> Path:
        return out / "systems" / name

    def write(self, out: Path) -> Path:
        return write_json(out / self.FILE, self.systems)

    def model_dir(self, record: dict[str, Any]) -> Path:
        return self.path / record["model_dir"]

    def training(self) -> list[TrainingSummary]:
        """Each system's (``<stage>/<system>``), from ``systems/<system>/trainer_state.json``."""
        where = Location(self.STAGE, self.path)
        return [read_summary(where, f"systems/{r['system']}/{TRAINER_STATE}", f"{self.STAGE}/{r['system']}")
                for r in self.systems]

    def tokenizer_dir(self, record: dict[str, Any]) -> Path:
        """Where a system's tokenizer was saved (its model folder unless a subclass says)."""
        return self.model_dir(record)

    def tokenizer(self, record: dict[str, Any]) -> Any:
        """The system's HF tokenizer."""
        from transformers import AutoTokenizer

        return AutoTokenizer.from_pretrained(self.tokenizer_dir(record), trust_remote_code=False)
