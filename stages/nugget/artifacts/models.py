"""Contracts of the Nugget study's trained models: ``train_nugget``, ``sweep_nugget``,
``train_baselines`` and the Nugget LMs (``train_nugget_lm``), with the readers that load them. Each
output's ``training()`` gives one `TrainingSummary` per model it trained
(`stages.artifacts.trainer_state`)."""

from __future__ import annotations

import csv
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from stages.artifacts.base import Location, Source, field, locate, records, write_json
from stages.artifacts.systems import SystemsOutput
from stages.artifacts.trainer_state import TRAINER_STATE, TrainingSummary, read_summary, summary_of

if TYPE_CHECKING:
    pass


META = "trained.json"  # what a single-model training stage records beside its model folder


@dataclass(frozen=True)
class TrainedNugget:
    """``train_nugget``: ``model/`` (``NuggetModel.from_pretrained``), ``trained.json``
    (what it is: objective and the Nugget settings it was trained with) and
    ``trainer_state.json``."""

    STAGE: ClassVar[str] = "train_nugget"
    DIR: ClassVar[str] = "model"
    model_dir: Path
    objective: str  # ae | mt
    ratio: float
    scorer_layer: int
    selector: str
    feedback: bool
    dev_loss: float | None = None

    def write(self, out: Path) -> Path:
        meta = {k: v for k, v in asdict(self).items() if k != "model_dir"}
        return write_json(out / META, meta)

    @classmethod
    def read(cls, source: Source) -> TrainedNugget:
        where = locate(source, cls.STAGE)
        meta = where.json(META)
        return cls(
            model_dir=where.folder(cls.DIR),
            objective=field(where, META, meta, "objective", str),
            ratio=field(where, META, meta, "ratio", float),
            scorer_layer=field(where, META, meta, "scorer_layer", int),
            selector=field(where, META, meta, "selector", str),
            feedback=field(where, META, meta, "feedback", bool),
            dev_loss=field(where, META, meta, "dev_loss", (float, type(None)), default=None),
        )

    def training(self) -> list[TrainingSummary]:
        return [read_summary(Location(self.STAGE, self.model_dir.parent), TRAINER_STATE, self.STAGE)]


SWEEP_FIELDS = ("trial", "objective", "ratio", "scorer_layer", "dev_loss", "final_train_loss", "steps",
                "initial_dev_loss", "exported_dev_loss", "dev_loss_n", "tokens_seen", "input_use", "input_use_note",
                "model_dir")


@dataclass(frozen=True)
class NuggetSweep:
    """``sweep_nugget``: ``results.json`` / ``results.csv`` (one record per trial, fields
    `SWEEP_FIELDS`, ``model_dir`` relative to the output; ``initial_dev_loss``,
    ``exported_dev_loss``, ``dev_loss_n``, ``tokens_seen``, ``input_use`` and
    ``input_use_note`` as in its fit's trainer state, read by `training`), ``best.json`` (lowest dev loss per objective) and
    ``trials/<trial>/model/``."""

    STAGE: ClassVar[str] = "sweep_nugget"
    FILE: ClassVar[str] = "results.json"
    path: Path
    trials: list[dict[str, Any]]

    @staticmethod
    def trial_dir(out: Path, trial: str) -> Path:
        """Where the producer puts trial ``trial``'s model."""
        return out / "trials" / trial / "model"

    def best(self) -> dict[str, dict[str, Any]]:
        return {o: min((r for r in self.trials if r["objective"] == o), key=lambda r: r["dev_loss"])
                for o in sorted({r["objective"] for r in self.trials})}

    def write(self, out: Path) -> None:
        write_json(out / self.FILE, self.trials)
        write_json(out / "best.json", self.best())
        with open(out / "results.csv", "w", newline="") as fh:
            writer = csv.DictWriter(fh, fieldnames=list(self.trials[0]) if self.trials else list(SWEEP_FIELDS))
            writer.writeheader()
            writer.writerows(self.trials)

    @classmethod
    def read(cls, source: Source) -> NuggetSweep:
        where = locate(source, cls.STAGE)
        trials = records(where, cls.FILE, where.json(cls.FILE), [
            ("trial", str), ("objective", str), ("ratio", float), ("scorer_layer", int), ("model_dir", str),
        ], what="trial records")
        for r in trials:
            where.folder(r["model_dir"])
        return cls(where.path, trials)

    def model_dir(self, trial: dict[str, Any]) -> Path:
        return self.path / trial["model_dir"]

    def training(self) -> list[TrainingSummary]:
        where = Location(self.STAGE, self.path)
        return [summary_of(where, self.FILE, r, f"{self.STAGE}/{r['trial']}", steps_key="steps") for r in self.trials]


@dataclass(frozen=True)
class TrainedBaselines(SystemsOutput):
    """``train_baselines``: ``systems.json`` (one record per system: ``system``, ``kind``
    nugget | bottleneck, ``objective``, ``model_dir`` relative to the output, ``dev_loss``;
    bottlenecks a ``decoder``, Nugget ablations ``ratio``, ``scorer_layer``, ``selector``,
    ``feedback``) and ``systems/<name>/model/``."""

    STAGE: ClassVar[str] = "train_baselines"

    @classmethod
    def read(cls, source: Source) -> TrainedBaselines:
        where, systems = cls.read_records(source, [("kind", str), ("objective", str)])
        for r in systems:
            if r["kind"] == "bottleneck":
                field(where, cls.FILE, r, "decoder", str)
            else:
                field(where, cls.FILE, r, "ratio", float)
                field(where, cls.FILE, r, "scorer_layer", int)
                field(where, cls.FILE, r, "selector", str)
                field(where, cls.FILE, r, "feedback", bool)
        return cls(where.path, systems)


def decoder_token_ids(model_dir: Path) -> tuple[int, int]:
    """(decoder start token, pad token) of an HF seq2seq model folder (its ``config.json``):
    what a window's decoder input starts with and is padded with (`nugget_core.nugget.collate_windows`)."""
    where = Location("model", Path(model_dir))
    config = where.json("config.json")
    return (field(where, "config.json", config, "decoder_start_token_id", int),
            field(where, "config.json", config, "pad_token_id", int))


@dataclass(frozen=True)
class TrainedNuggetLM(SystemsOutput):
    """``train_nugget_lm``: ``systems.json`` (one record per system: ``system``, ``memory``
    (`nugget_core.NuggetLMConfig.memory`), ``ratio`` (nugget; else null), ``paper_row`` (its
    row of Nugget table 3), ``segment_tokens``, ``histories`` (the h it trained with),
    ``init`` (the autoencoder it started from), ``model_dir`` relative to the output,
    ``dev_loss``) and ``systems/<name>/model/`` (``NuggetLM.from_pretrained``)."""

    STAGE: ClassVar[str] = "train_nugget_lm"

    @classmethod
    def read(cls, source: Source) -> TrainedNuggetLM:
        where, systems = cls.read_records(source, [
            ("memory", str), ("paper_row", str), ("segment_tokens", int), ("histories", list), ("init", str),
        ])
        return cls(where.path, systems)

    def load(self, record: dict[str, Any], device: Any = "cpu", precision: str = "fp32") -> Any:
        """The system's `nugget_core.NuggetLM`, in eval mode on ``device`` in ``precision``."""
        from nugget_core import NuggetLM
        from stages.common.device import place_model

        return place_model(NuggetLM.from_pretrained(self.model_dir(record)), device, precision)

    def decoder_token_ids(self, record: dict[str, Any]) -> tuple[int, int]:
        return decoder_token_ids(self.model_dir(record))
