"""Config sections of the training stages and the sweep (``train.*``); see :mod:`stages.config.schema`."""

from __future__ import annotations

from dataclasses import dataclass

from stages.config.validate import spec


@dataclass
class TrainJob:
    backend: str = spec("ddp", help="ddp (torch DDP) or deepspeed (ZeRO-2).", choices=("ddp", "deepspeed"))
    num_workers: int = spec(1, help="Ray Train workers.", ge=1)
    use_gpu: bool = spec(False, help="One GPU per worker.")
    precision: str = spec(
        "fp32", help="fp32, or bf16: autocast for ddp (fp32 weights), DeepSpeed's bf16 for deepspeed.",
        choices=("fp32", "bf16"),
    )
    lr: float = spec(5e-5, help="Peak learning rate.", gt=0.0)
    optimizer: str = spec(
        "adam", help="adam: Adam with weight_decay as an L2 term added to the gradient (torch.optim.Adam); "
        "adamw: decoupled weight decay (AdamW). The same optimiser on both backends (DeepSpeed's adam_w_mode "
        "is set from it).",
        choices=("adam", "adamw"),
    )
    betas: list[float] = spec([0.9, 0.999], help="Adam betas.")
    weight_decay: float = spec(0.0, help="Weight decay.", ge=0.0)
    schedule: str = spec(
        "constant", help="LR schedule after the warm-up: constant, cosine or linear decay to 0 at max_steps.",
        choices=("constant", "cosine", "linear"),
    )
    warmup_steps: int = spec(0, help="Linear warm-up steps.", ge=0)
    max_steps: int = spec(1000, help="Optimiser steps.", ge=1)
    batch_size: int = spec(16, help="Sequences per worker per step.", ge=1)
    grad_accum: int = spec(1, help="Gradient accumulation steps.", ge=1)
    group_by_length: bool = spec(
        False, help="Batches of similar-length examples (sorted within windows of 50 batches, the windows' "
        "batches shuffled): less padding, same examples per epoch. Only tasks that define example_length."
    )
    max_grad_norm: float | None = spec(
        None, help="Clip the global gradient norm to this (both backends); null = no clipping.", gt=0.0
    )
    eval_every: int = spec(100, help="Steps between dev evaluations.", ge=1)
    checkpoint_every: int = spec(100, help="Steps between checkpoints.", ge=1)
    early_stopping_patience: int = spec(0, help="Dev evals without improvement before stopping (0 = off).", ge=0)
    export_model: str = spec(
        "final", help="The weights a fit ends with: final = its last step's; best_dev = its lowest-dev-loss "
        "evaluation's (with early_stopping_patience: training 'until convergence on the dev set', the best "
        "checkpoint kept; one copy of the trainable parameters per improving evaluation in the fit's storage).",
        choices=("final", "best_dev"),
    )
    dev_examples: int = spec(256, help="Dev examples per evaluation (0 = all).", ge=0)
    log_every: int = spec(
        1, help="Steps between train_loss / lr / tokens_per_s logs (rank 0, batched: cheap).", ge=1
    )
    max_failures: int = spec(1, help="Worker-group restarts from the last checkpoint.", ge=0)

    def cross_field_errors(self) -> list[str]:
        if len(self.betas) != 2 or not all(0.0 <= b < 1.0 for b in self.betas):
            return [f"betas: value {self.betas!r} must be two numbers in [0, 1)"]
        return []

    def examples_per_step(self) -> int:
        """Examples per optimiser step: every worker, every accumulation step."""
        return self.batch_size * self.num_workers * self.grad_accum

    def stopping_rule(self) -> str:
        """When this job's training ends and which weights it keeps, in words: two systems
        whose rules read alike had the same budget (the report's comparisons rest on it)."""
        batch = self.examples_per_step()
        stop = (f"until {self.early_stopping_patience} dev evaluations (every {self.eval_every} steps) without a "
                f"lower loss, at most {self.max_steps} steps" if self.early_stopping_patience
                else f"{self.max_steps} steps (dev loss every {self.eval_every})")
        kept = "the best dev evaluation's weights" if self.export_model == "best_dev" else "the last step's weights"
        return f"{stop} of {batch} examples, dev loss on {self.dev_examples or 'all'} dev examples, {kept}"


@dataclass
class NuggetTrainJob(TrainJob):
    objective: str = spec("ae", help="ae: reconstruct the source; mt: translate.", choices=("ae", "mt"))
    deletion_noise: float = spec(
        0.0, help="AE input token-deletion probability (TSDAE baseline: 0.6).", ge=0.0, lt=1.0
    )


@dataclass
class LMTrainJob(TrainJob):
    """A job training LoRA adapters on the decoder-only LM (Nugget2D, Full FT)."""

    activation_checkpointing: bool = spec(
        False, help="Recompute the LM layers' activations in backward instead of keeping them (HF non-reentrant "
        "checkpointing): less activation memory for about one more forward of compute.",
    )


@dataclass
class FinetuneJob(LMTrainJob):
    finetune_task: str = spec(
        "qa", help="Task data (build_lm) for fine-tuning: qa or summarization.", choices=("qa", "summarization")
    )
    max_doc_tokens: int = spec(
        0, help="Fine-tuning: keep the first N tokens of each document part (0 = all); match eval.<task>.max_doc_tokens.",
        ge=0,
    )


@dataclass
class Nugget2DTrainJob(FinetuneJob):
    objective: str = spec(
        "continuation",
        help="Nugget2D objective (paper §2.4-2.5); autoregressive only in train.nugget2d_ar.",
        choices=("autoencoding", "continuation", "finetune", "autoregressive"),
    )
    lm_corpus: str = spec(
        "pile", help="LM segments for objective=autoregressive (build_lm).", choices=("pile", "wiki")
    )


@dataclass
class Nugget2DCompressorJob(Nugget2DTrainJob):
    extra_ratios: list[float] = spec(
        [], help="train_nugget2d also trains a compressor at each of these ratios (same objective and job), "
        "read by eval_qa for its row at that ratio (Nugget2D §6.2: the 5x model is trained at r = 0.2).",
    )
    ar_scorer: str = spec(
        "compressor",
        help="Scorer that calibrate_threshold calibrates and train_nugget2d_ar reuses frozen: compressor = "
        "this stage's model; autoencoding = an autoencoding compressor trained in the same fit at "
        "nugget2d.ratio (Nugget2D §2.5), unless the objective is autoencoding already.",
        choices=("compressor", "autoencoding"),
    )

    def cross_field_errors(self) -> list[str]:
        errors = super().cross_field_errors()
        errors += [f"extra_ratios: value {r!r} must be in (0, 1]" for r in self.extra_ratios if not 0 < r <= 1]
        if len(set(self.extra_ratios)) != len(self.extra_ratios):
            errors.append(f"extra_ratios: {self.extra_ratios!r} repeats a ratio")
        return errors


@dataclass
class Nugget2DARJob(Nugget2DTrainJob):
    baselines: list[str] = spec(
        [], help="LM baselines train_nugget2d_ar also trains in its fit, with its data, job and LoRA theta "
        "(Nugget2D §5.1: Full and Compressive 'with the same configuration'); eval_lm decodes them with "
        "eval.lm.baseline_adapter: trained.",
        choices=("full", "compressive"),
    )

    def cross_field_errors(self) -> list[str]:
        errors = super().cross_field_errors()
        if len(set(self.baselines)) != len(self.baselines):
            errors.append(f"baselines: {self.baselines!r} repeats a system")
        return errors


@dataclass
class Nugget2DAEJob(LMTrainJob):
    """train_nugget2d_ae (Nugget2D §4): autoencoding compressors and their ICAE baseline."""

    ratios: list[float] = spec(
        [0.05, 0.1], help="A Nugget2D autoencoder per ratio (paper: 0.05 and 0.1), all in one fit.", nonempty=True)
    icae: bool = spec(
        True, help="Also train ICAE (fixed memory slots, Ge et al. 2023) per ratio, with "
        "ceil(ratio * max_doc_tokens) slots: the budget Nugget2D reaches on the longest document.")
    min_doc_tokens: int = spec(
        16, help="Training documents are cut to a length drawn uniformly from [min_doc_tokens, their length] "
        "(seeded by step), so every model learns every length fig. 5 evaluates.", ge=1)
    max_doc_tokens: int = spec(
        512, help="Longest training document (the first tokens of build_lm's continuation documents; ICAE's "
        "input length, 512); keep eval.autoencoding.lengths within it.", ge=1)

    def cross_field_errors(self) -> list[str]:
        errors = super().cross_field_errors()
        errors += [f"ratios: value {r!r} must be in (0, 1]" for r in self.ratios if not 0 < r <= 1]
        if len(set(self.ratios)) != len(self.ratios):
            errors.append(f"ratios: {self.ratios!r} repeats a ratio")
        if self.min_doc_tokens > self.max_doc_tokens:
            errors.append(f"min_doc_tokens: {self.min_doc_tokens} exceeds max_doc_tokens={self.max_doc_tokens}")
        return errors


NUGGET_LM_BASELINES = ("tsdae", "compressive", "transformer")


@dataclass
class NuggetLMJob(TrainJob):
    """train_nugget_lm (Nugget §6.2, table 3, appendix B.2): Nugget LMs and their baselines,
    each started from an autoencoder (train_nugget's AE model; TSDAE: train_baselines'
    tsdae_ae), all in one fit."""

    ratios: list[float] = spec([0.05, 0.1], help="A Nugget LM per nugget ratio of the history segments.",
                               nonempty=True, gt=0.0, le=1.0, unique=True)
    baselines: list[str] = spec(
        list(NUGGET_LM_BASELINES), help="tsdae: one mean-pooled vector per segment; compressive: encoder states "
        "mean-pooled in chunks of compressive_chunk tokens (Rae et al. 2020); transformer: no memory (h = 0).",
        choices=NUGGET_LM_BASELINES, unique=True)
    segment_tokens: int = spec(128, help="Segment length s: the window the decoder reads and the unit of "
                               "history each memory entry compresses (appendix B.2: 128).", ge=2)
    histories: list[int] = spec(
        [1, 2, 4, 8], help="History segments h; each training batch draws one (seeded by step), dev uses the "
        "largest. The paper trains a model per h; one model serves every h here.", nonempty=True, ge=1, unique=True)
    compressive_chunk: int = spec(16, help="Tokens per compressive vector (paper: 512 tokens into 32).", ge=1)


@dataclass
class SweepSection:
    ratios: list[float] = spec([0.05, 0.1, 0.15, 0.25], help="Grid over nugget.ratio.", nonempty=True)
    scorer_layers: list[int] = spec([0, 3, 6, 9], help="Grid over nugget.scorer_layer.", nonempty=True, ge=0)
    objectives: list[str] = spec(
        ["ae", "mt"], help="Grid over train.nugget.objective.", nonempty=True, choices=("ae", "mt")
    )
    max_concurrent_trials: int = spec(1, help="Trials running at once (keep CPUs for workers).", ge=1)
    max_steps: int | None = spec(
        None, help="Optimiser steps per trial (null = train.nugget.max_steps).", ge=1
    )

    def cross_field_errors(self) -> list[str]:
        return [f"ratios: value {r!r} must be in (0, 1]" for r in self.ratios if not 0 < r <= 1]


# RE table 1: whether the pretrained encoder is frozen, whether new layers are stacked on it
RE_CONFIGS = {"a": (False, False), "b": (True, False), "c": (False, True), "d": (True, True)}
RE_POOLINGS = ("cls", "mean")
RE_DECODERS = ("input", "cross", "gating")


@dataclass
class RETrainJob(TrainJob):
    """train_re (RE §4.1, tables 1-3, 8): one restoration model per sentence count x encoder
    configuration x pooling x decoder, trained in turn in one fit."""

    configs: list[str] = spec(
        list(RE_CONFIGS), help="RE table 1: a = pretrained encoder updated, b = frozen, c = updated + extra_layers "
        "new layers, d = frozen + extra_layers new layers.", choices=tuple(RE_CONFIGS), unique=True, nonempty=True)
    poolings: list[str] = spec(list(RE_POOLINGS), help="cls: a [CLS] vector's state (eq. 1); mean: sum / sqrt(T) "
                               "(eq. 2).", choices=RE_POOLINGS, unique=True, nonempty=True)
    decoders: list[str] = spec(list(RE_DECODERS), help="input: the vector as the first decoder input, no "
                               "cross-attention (fig. 2a); cross: cross-attention over it (2b); gating: the gating "
                               "layer (2c-d).", choices=RE_DECODERS, unique=True, nonempty=True)
    sentence_counts: list[int] = spec([1, 3, 5], help="Sentences per text (each one of data.re.sentence_counts).",
                                      unique=True, nonempty=True, ge=1)
    beyond_one_sentence: str = spec(
        "all", help="Models for texts of more than 1 sentence: all = the whole grid (RE table 8); table3 = only RE "
        "table 3's rows (configurations c / d, mean pooling, cross / gating decoders; the rest of table 8 is "
        "reported not run).", choices=("all", "table3"))
    extra_layers: int = spec(3, help="Randomly initialised layers of configurations c / d (paper: 3).", ge=1)
    freeze_encoder_embedding: bool = spec(
        True, help="Configurations b / d: the frozen encoder's token embedding stays frozen where the decoder shares "
        "its table (T5-small): the encoder reads its own frozen copy (RE §4.2: in (b) only the projection is "
        "updated). false: the shared table trains through the decoder and moves the encoder's input embeddings.")
    repr_dim: int = spec(0, help="d_repr of the embedding (0 = d_model; paper: 512 = d_model).", ge=0)
    max_tokens: int = spec(0, help="Truncate texts to this many tokens (0 = the base model's limit).", ge=0)


@dataclass
class RERetrievalJob(TrainJob):
    """train_re_retrieval (RE §4.4, tables 4, 9, appendix B): DPR bi-encoders (query and
    passage towers, in-batch negatives of all workers plus one hard negative per query) started from the
    restoration encoders of train_re, and from the pretrained encoder with untrained new
    parts (the paper's 'random initialize' rows)."""

    configs: list[str] = spec(list(RE_CONFIGS), help="Restoration encoders of these configurations (RE table 1).",
                              choices=tuple(RE_CONFIGS), unique=True, nonempty=True)
    sentence_counts: list[int] = spec([1, 3, 5], help="... trained on texts of these sentence counts.",
                                      unique=True, nonempty=True, ge=1)
    pooling: str = spec("mean", help="Pooling of the restoration encoders used (tables 4 / 9 do not say; mean "
                        "pooling is the one that restores).", choices=RE_POOLINGS)
    decoder: str = spec("gating", help="Decoder the restoration encoders were trained with (the proposed one).",
                        choices=RE_DECODERS)
    pretrained_baselines: bool = spec(True, help="Also the pretrained encoder without restoration training "
                                      "(+ untrained projection; + untrained extra layers for c / d).")
    hard_negatives: int = spec(1, help="Hard negatives per query in a batch (appendix B: 1).", ge=0)
    max_query_tokens: int = spec(70, help="Query truncation (appendix B: 70).", ge=1)
    max_passage_tokens: int = spec(350, help="Passage truncation (appendix B: 350).", ge=1)

    def negatives_per_query(self) -> int:
        """Passages a query's positive competes with in a training step: every passage of the
        global batch (`nugget_core.biencoder` gathers all workers'; accumulation steps are
        scored apart) but its own positive. RE app. B: 128 x (1 + 1) - 1 = 255."""
        return self.batch_size * self.num_workers * (1 + self.hard_negatives) - 1


@dataclass
class TrainSection:
    nugget: NuggetTrainJob = spec(NuggetTrainJob(), help="train_nugget stage (AE / MT).")
    nugget2d: Nugget2DCompressorJob = spec(Nugget2DCompressorJob(), help="train_nugget2d stage (compressors).")
    nugget2d_ar: Nugget2DARJob = spec(
        Nugget2DARJob(objective="autoregressive"), help="train_nugget2d_ar stage (and the LM baselines)."
    )
    nugget2d_ft: Nugget2DTrainJob = spec(
        Nugget2DTrainJob(objective="finetune", finetune_task="summarization"),
        help="train_nugget2d_ft stage: train_nugget2d's model fine-tuned on a task (objective finetune).",
    )
    nugget2d_ae: Nugget2DAEJob = spec(
        Nugget2DAEJob(), help="train_nugget2d_ae stage: autoencoding compressors per ratio and ICAE (Nugget2D §4).")
    full_ft: FinetuneJob = spec(
        FinetuneJob(finetune_task="summarization"),
        help="train_full_ft stage: the base LM fine-tuned on a task with one LoRA adapter (the Full FT baseline).",
    )
    baselines: TrainJob = spec(
        TrainJob(), help="train_baselines stage: every system of eval.baselines.systems (same data as Nugget)."
    )
    nugget_lm: NuggetLMJob = spec(NuggetLMJob(), help="train_nugget_lm stage (Nugget LM, Nugget table 3).")
    sweep: SweepSection = spec(SweepSection(), help="Ray Tune sweep over r and l.")
    re: RETrainJob = spec(RETrainJob(), help="train_re stage: the RE restoration models (RE tables 2, 3, 8).")
    re_retrieval: RERetrievalJob = spec(
        RERetrievalJob(), help="train_re_retrieval stage: DPR bi-encoders from the RE encoders (RE tables 4, 9).")
