"""Contracts of the Nugget2D study's outputs: the base LMs (``prepare_lm``), the LM / QA / summary
records (``build_lm``), trained Nugget2D models (``train_nugget2d``, ``train_nugget2d_ft``,
``train_nugget2d_ar``, ``train_nugget2d_ae``), the Full fine-tuned LM (``train_full_ft``) and the
calibrated autoregressive threshold Lambda (``calibrate_threshold``), with the readers that load
them."""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from dataclasses import field as dc_field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from stages.artifacts.base import Location, Source, Stored, field, locate, write_json
from stages.artifacts.trainer_state import TRAINER_STATE, TrainingSummary, read_summary
from stages.common.progress import progress_logger
from stages.framework.stage import Artifact

if TYPE_CHECKING:
    from nugget_core.nugget2d import Nugget2DConfig


log = progress_logger("nugget.artifacts")
META = "trained.json"  # what a single-model training stage records beside its model folder


#: eval_efficiency's `EvalTable` (`stages.nugget2d.lm.efficiency_table`): its note opening with this describes
#: the training-step rows, which the report shows in a table of their own
EFFICIENCY_TRAINING_NOTE = "training step:"

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
    """``build_lm``: ``lm_<corpus>.parquet`` segments (``split``, ``document_id``: the source document, the unit
    the evaluations resample, ``distant``, ``recent``), ``continuation.parquet`` triples (``split``, ``document_id``,
    ``doc``, ``prompt``, ``answer``), ``<task>.jsonl`` records (``id``, ``split``, ``document``, ``instruction``, ...)."""

    STAGE: ClassVar[str] = "build_lm"
    DOCUMENT: ClassVar[str] = "document_id"
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

    def _continuation_rows(self, split: str, *needed: str) -> list[dict[str, Any]]:
        """The rows of ``split``; a `ContractError` naming a ``needed`` column the file lacks."""
        import pyarrow.parquet as pq

        path = self.continuation()
        names = pq.read_schema(path).names
        if missing := [c for c in needed if c not in names]:
            raise self._where().error(path.name, f"has no column {missing}: written by an older build_lm; rerun it")
        rows = [r for r in pq.read_table(path).to_pylist() if r["split"] == split]
        if not rows:
            raise ValueError(f"{path}: no continuation windows in split {split!r}")
        return rows

    def continuation_windows(self, split: str) -> list[list[int]]:
        """The triples of ``split`` as whole windows, ``doc + prompt + answer`` (Nugget2D §4's documents)."""
        return [r["doc"] + r["prompt"] + r["answer"] for r in self._continuation_rows(split)]

    def continuation_documents(self, split: str) -> list[tuple[str, list[int]]]:
        """`continuation_windows` with the document each was cut from (its windows in text order)."""
        return [(str(r[self.DOCUMENT]), r["doc"] + r["prompt"] + r["answer"])
                for r in self._continuation_rows(split, self.DOCUMENT)]

    def records(self, task: str) -> Path:
        return self._where().file(self.records_file(Path(), task).name)


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

    def summary(self, stage: str = STAGE) -> TrainingSummary:
        """This model's own `TrainingSummary` (its fit's trainer state beside its folder)."""
        return read_summary(Location(stage, self.path.parent), TRAINER_STATE, stage)

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


@dataclass(frozen=True)
class CalibratedThreshold:
    """``calibrate_threshold``: ``threshold.json``, the one place downstream
    autoregressive stages take Lambda from: Lambda, the ratio r it was calibrated for, which
    stage's scorer it was calibrated on (and that scorer's fingerprint and window), and
    the calibration's measurements."""

    STAGE: ClassVar[str] = "calibrate_threshold"
    FILE: ClassVar[str] = "threshold.json"
    HISTOGRAM: ClassVar[str] = "scores_hist.png"  # the scorer's scores with Lambda marked (optional)
    threshold: float  # Lambda
    ratio: float
    scorer_stage: str
    scorer_fingerprint: str
    scorer_window: int
    metrics: dict[str, float] = dc_field(default_factory=dict)

    def write(self, out: Path) -> Path:
        return write_json(out / self.FILE, {
            "lambda": self.threshold, "ratio": self.ratio, "scorer_stage": self.scorer_stage,
            "scorer_fingerprint": self.scorer_fingerprint, "scorer_window": self.scorer_window,
            "metrics": self.metrics,
        })

    @classmethod
    def read(cls, source: Artifact | Path | str) -> CalibratedThreshold:
        where = locate(source, cls.STAGE)
        raw: Any = where.json(cls.FILE)
        return cls(
            threshold=field(where, cls.FILE, raw, "lambda", float),
            ratio=field(where, cls.FILE, raw, "ratio", float),
            scorer_stage=field(where, cls.FILE, raw, "scorer_stage", str),
            scorer_fingerprint=field(where, cls.FILE, raw, "scorer_fingerprint", str),
            scorer_window=field(where, cls.FILE, raw, "scorer_window", int),
            metrics=field(where, cls.FILE, raw, "metrics", dict, default={}),
        )


@dataclass(frozen=True)
class StoredCalibratedThreshold(Stored[CalibratedThreshold]):
    """`CalibratedThreshold` with where it was read from (the report shows its histogram)."""

    @classmethod
    def read(cls, source: Source) -> StoredCalibratedThreshold:
        return cls(CalibratedThreshold.read(source), locate(source, CalibratedThreshold.STAGE))

    def histogram(self) -> Path | None:
        """The scores' histogram (`CalibratedThreshold.HISTOGRAM`), where the stage drew one."""
        path = self.where.path / CalibratedThreshold.HISTOGRAM
        return path if path.is_file() else None
