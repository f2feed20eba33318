"""Contracts of the training group's outputs: trained Nugget models (``train_nugget``,
``sweep_nugget``, ``train_baselines``), the Nugget LMs (``train_nugget_lm``), trained Nugget2D models (``train_nugget2d``,
``train_nugget2d_ft``, ``train_nugget2d_ar``) and the Full fine-tuned LM
(``train_full_ft``), with the readers that load them. Each output's ``training()`` gives
one `TrainingSummary` per model it trained (dev loss before -> after, steps, tokens
seen: `stages.artifacts.trainer_state`)."""

from __future__ import annotations

import csv
import hashlib
import math
from dataclasses import asdict, dataclass
from dataclasses import field as dataclass_field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from stages.artifacts.base import Location, field, locate, records, write_json
from stages.artifacts.data import BaseLM
from stages.artifacts.systems import SystemsOutput
from stages.artifacts.trainer_state import TRAINER_STATE, TrainingSummary, read_summary, summary_of
from stages.common.progress import progress_logger
from stages.framework.stage import Artifact

if TYPE_CHECKING:
    from nugget_core.nugget2d import Nugget2DConfig

Source = Artifact | Path | str
log = progress_logger("nugget.artifacts")
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
                "initial_dev_loss", "exported_dev_loss", "dev_loss_n", "tokens_seen", "model_dir")


@dataclass(frozen=True)
class NuggetSweep:
    """``sweep_nugget``: ``results.json`` / ``results.csv`` (one record per trial, fields
    `SWEEP_FIELDS`, ``model_dir`` relative to the output; ``initial_dev_loss``,
    ``exported_dev_loss``, ``dev_loss_n`` and ``tokens_seen`` as in its fit's trainer
    state, read by `training`), ``best.json`` (lowest dev loss per objective) and
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


@dataclass(frozen=True)
class TrainedNugget2D:
    """``train_nugget2d`` / ``train_nugget2d_ft`` / ``train_nugget2d_ar``: ``nugget2d/``
    (`nugget_core.nugget2d.save_nugget2d` format) and ``trained.json`` recording the
    training objective (autoencoding / continuation / finetune / ...), its task and the
    ratio it was trained at.

    ``train_nugget2d`` may hold further models trained in the same fit (``variants``:
    name -> record with ``dir`` relative to the output, ``objective``, ``ratio``): the
    compressors of ``train.nugget2d.extra_ratios`` (named ``r<ratio>``, read by
    `at_ratio`) and the autoencoding compressor whose scorer the autoregressive model
    reuses (``autoencoding``, read by `scorer_source`); ``train_nugget2d_ae`` holds its
    autoencoders per ratio and ICAE models (objective ``icae``: `load` gives an
    `ICAEModel`). ``base_role`` names the
    ``prepare_lm`` base LM (`BaseLM.ROLES`) a model was trained on, per model. Each model
    folder has its fit's ``trainer_state.json`` beside it (`training`)."""

    STAGE: ClassVar[str] = "train_nugget2d"
    DIR: ClassVar[str] = "nugget2d"
    AUTOENCODING: ClassVar[str] = "autoencoding"
    ICAE: ClassVar[str] = "icae"  # train_nugget2d_ae's ICAE baselines (nugget_core.nugget2d.ICAEModel)
    path: Path
    objective: str
    finetune_task: str = ""
    ratio: float | None = None  # None: an artifact written before ratios were recorded
    variants: dict[str, dict[str, Any]] = dataclass_field(default_factory=dict)
    base_role: str = "lm"  # the prepare_lm role (BaseLM.ROLES) it was trained on

    @classmethod
    def folder(cls, out: Path) -> Path:
        return out / cls.DIR

    @classmethod
    def variant_folder(cls, out: Path, name: str) -> Path:
        """Where the producer puts variant ``name``'s model."""
        return out / "variants" / name / cls.DIR

    @staticmethod
    def ratio_name(ratio: float) -> str:
        return f"r{ratio:g}"

    def write(self, out: Path) -> Path:
        return write_json(out / META, {"objective": self.objective, "finetune_task": self.finetune_task,
                                       "ratio": self.ratio, "variants": self.variants, "base_role": self.base_role})

    @classmethod
    def read(cls, source: Source, stage: str = STAGE) -> TrainedNugget2D:
        where = locate(source, stage)
        meta = where.json(META)
        variants = field(where, META, meta, "variants", dict, default={})
        for name, record in variants.items():
            field(where, META, record, "objective", str)
            field(where, META, record, "ratio", float)
            field(where, META, record, "base_role", str, default="lm")
            where.folder(field(where, META, record, "dir", str))
            if not isinstance(name, str) or not name:
                raise where.error(META, f"has a variant without a name: {record!r}")
        return cls(where.folder(cls.DIR), field(where, META, meta, "objective", str),
                   field(where, META, meta, "finetune_task", str, default=""),
                   field(where, META, meta, "ratio", (float, type(None)), default=None), variants,
                   field(where, META, meta, "base_role", str, default="lm"))

    def variant(self, name: str) -> TrainedNugget2D:
        """Variant ``name`` as a model of its own (a `KeyError` naming the variants held)."""
        if name not in self.variants:
            raise KeyError(f"{self.path.parent}: no Nugget2D variant {name!r}; it holds {sorted(self.variants)}")
        record = self.variants[name]
        return TrainedNugget2D(self.path.parent / record["dir"], record["objective"], "", float(record["ratio"]),
                               base_role=record.get("base_role", "lm"))

    def training(self, stage: str = STAGE) -> list[TrainingSummary]:
        """The main model's (``stage``) and every variant's (``<stage>/<name>``), in that order."""
        out = self.path.parent
        where = Location(stage, out)
        return [read_summary(where, TRAINER_STATE, stage), *(
            read_summary(where, (Path(r["dir"]).parent / TRAINER_STATE).as_posix(), f"{stage}/{name}")
            for name, r in self.variants.items())]

    def at_ratio(self, ratio: float) -> TrainedNugget2D | None:
        """The model trained at ``ratio`` (this one, or a variant), or None."""
        if self.ratio is not None and math.isclose(self.ratio, ratio):
            return self
        name = self.ratio_name(ratio)
        return self.variant(name) if name in self.variants else None

    def scorer_source(self, stage: str = STAGE) -> tuple[str, TrainedNugget2D]:
        """The model whose scorer the autoregressive model reuses (the autoencoding
        variant when one was trained, else this model) and its label: ``stage`` or
        ``<stage>/autoencoding`` (recorded with the Lambda calibrated on it)."""
        if self.AUTOENCODING in self.variants:
            return f"{stage}/{self.AUTOENCODING}", self.variant(self.AUTOENCODING)
        return stage, self

    @property
    def soft_prompt(self) -> bool:
        """Continuation / autoencoding models read ``[soft prompt] prompt``; fine-tuned
        ones do not (`nugget_core.nugget2d.objectives`)."""
        return self.objective != "finetune"

    def load_from(self, prepared: Source, device: str = "cpu", precision: str = "fp32") -> tuple[Any, BaseLM]:
        """`load` on the base LM it was trained on (``prepare_lm``'s ``base_role``
        folder); returns the model and that base LM."""
        base = BaseLM.read(prepared, self.base_role)
        return self.load(base, device, precision), base

    def load(self, base: BaseLM, device: str = "cpu", precision: str = "fp32") -> Any:
        """The model on the base LM, in eval mode, gradients off, on ``device`` with its
        weights in ``precision`` (``eval.dtype``; the base LM is read in it directly)."""
        from nugget_core.nugget2d import load_icae, load_nugget2d
        from stages.common.device import dtype_of, place_model

        loader = load_icae if self.objective == self.ICAE else load_nugget2d  # ICAE: Nugget2D parts + memory
        model = loader(self.path, base.path, dtype=dtype_of(precision, "eval.dtype"))
        model = place_model(model, device, precision)
        for p in model.parameters():
            p.requires_grad_(False)
        log.info("loaded Nugget2D from %s on %s (%s, %s)", self.path, base.path, device, precision)
        return model


@dataclass(frozen=True)
class FullFinetunedLM:
    """``train_full_ft``: ``lm_lora/`` (one peft adapter on the base LM + tokenizer),
    ``trained.json`` (its fine-tuning task) and ``trainer_state.json``."""

    STAGE: ClassVar[str] = "train_full_ft"
    DIR: ClassVar[str] = "lm_lora"
    path: Path
    finetune_task: str

    @classmethod
    def folder(cls, out: Path) -> Path:
        return out / cls.DIR

    def write(self, out: Path) -> Path:
        return write_json(out / META, {"finetune_task": self.finetune_task})

    @classmethod
    def read(cls, source: Source) -> FullFinetunedLM:
        where = locate(source, cls.STAGE)
        meta = where.json(META)
        return cls(where.folder(cls.DIR), field(where, META, meta, "finetune_task", str))

    def training(self) -> list[TrainingSummary]:
        return [read_summary(Location(self.STAGE, self.path.parent), TRAINER_STATE, self.STAGE)]

    def load(self, base: BaseLM, config: Nugget2DConfig, device: str = "cpu", precision: str = "fp32") -> Any:
        """The base LM with this adapter merged in, inside a fresh `Nugget2DModel` of
        ``config``, in eval mode. Only the wrapper's Full path runs on it
        (`Nugget2DModel.encode_full` / ``lm_forward(None)``: every Nugget2D adapter off), so Full zero-shot and Full
        fine-tuned decode through one code path and their costs compare directly."""
        from peft import PeftModel

        from nugget_core.nugget2d import Nugget2DModel
        from stages.common.device import place_model

        merged = PeftModel.from_pretrained(base.causal_lm(precision), str(self.path)).merge_and_unload()
        model = place_model(Nugget2DModel(merged, config), device, precision)
        for p in model.parameters():
            p.requires_grad_(False)
        log.info("loaded the fine-tuned full LM from %s (%s, %s)", self.path, device, precision)
        return model


def scorer_fingerprint(model: Any) -> str:
    """sha256 of a Nugget2D model's scorer weights: tells whether two checkpoints share
    the scorer that a threshold was calibrated on."""
    import torch

    digest = hashlib.sha256()
    for name, tensor in sorted(model.scorer.state_dict().items()):
        digest.update(name.encode())
        digest.update(tensor.detach().to("cpu", torch.float32).contiguous().numpy().tobytes())
    return digest.hexdigest()[:16]
