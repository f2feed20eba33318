"""Config sections of the Nugget2D study: its LM data (``data.lm``), training jobs (``train.nugget2d``,
``train.nugget2d_ft``, ``train.nugget2d_ar``, ``train.nugget2d_ae``, ``train.full_ft``), the
threshold calibration (``calibrate.threshold``) and evaluations (``eval.lm``, ``eval.qa``,
``eval.summarization``, ``eval.autoencoding``, ``eval.presses``, ``eval.harness``). The schema
(`stages.config.schema`) places each at its path; YAML files in ``conf/`` set them."""

from __future__ import annotations

from dataclasses import dataclass

from stages.config.job import TrainJob
from stages.config.validate import SPLITS, spec

LM_CORPORA = ("wiki", "pile")  # build_lm's lm_<corpus>.parquet


@dataclass
class ThresholdCalibration:
    """calibrate_threshold (Nugget2D §2.5): Lambda = (1 - r) quantile, r = nugget2d.ratio."""

    corpora: list[str] = spec(["wiki", "pile"], help="LM corpora sampled.", choices=LM_CORPORA, nonempty=True)
    sample_split: str = spec("train", help="Split Lambda is estimated on.", choices=SPLITS)
    heldout_split: str = spec("test", help="Split the realised ratio is reported on.", choices=SPLITS)
    sample_docs: int = spec(256, help="Sampled segments (documents) per corpus for Lambda.", ge=1)
    heldout_docs: int = spec(128, help="Held-out segments per corpus for the realised ratio.", ge=1)
    bins: int = spec(50, help="Bins of the score histogram.", ge=5)

    def cross_field_errors(self) -> list[str]:
        if self.sample_split == self.heldout_split:
            return [f"heldout_split: value {self.heldout_split!r} must differ from sample_split (held-out text)"]
        return []


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
    squad_files: str = spec("", help="Local SQuAD copy (glob, HF layout, {split} = the HF split; "
                            "without {split}: one pool, re-split); empty = by name.")
    cnn_files: str = spec("", help="Local CNN/DailyMail copy (glob as squad_files); empty = by name.")
    pile_files: str = spec("", help="Local Pile sample (glob, HF layout: a 'text' column), e.g. of the original "
                           "Pile's jsonl shards; empty = monology/pile-uncopyrighted by name (the Pile without its "
                           "subsets under copyright).")
    wiki_files: str = spec("", help="Local WikiText-103 copy (glob naming {split}: validation / test); empty = by name.")
    wikitext_config: str = spec(
        "wikitext-103-v1", help="WikiText-103 version: v1 keeps <unk>, which word-level PPL excludes (Nugget2D §5).",
        choices=("wikitext-103-v1", "wikitext-103-raw-v1"),
    )

    def cross_field_errors(self) -> list[str]:
        if self.source == "paper" and self.wiki_files and "{split}" not in self.wiki_files:
            return [f"wiki_files: {self.wiki_files!r} must name the split ({{split}}): table 1 scores WikiText-103's "
                    "test split as released, and one pool split here would score other articles"]
        return []


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


# Training-free KV presses evaluated beside Nugget2D at its KV budget (mirrors
# nugget_core.nugget2d.presses.PRESSES / STREAMING_PRESSES; tests/evaluation checks it).
PRESS_SYSTEMS = ("streaming_llm", "snapkv", "key_norm")
STREAMING_PRESS_SYSTEMS = ("streaming_llm", "key_norm")


@dataclass
class PressSection:
    """Settings of the training-free KV presses (eval_qa, eval_summarization, eval_lm):
    each keeps per layer and KV head as many positions as Nugget2D keeps per layer."""

    sink_tokens: int = spec(4, help="StreamingLLM: first tokens always kept (attention sinks; Xiao et al. 2024: 4).",
                            ge=0)
    snapkv_window: int = spec(
        64, help="SnapKV: observation window, the document's last tokens whose attention ranks the rest "
        "(Li et al. 2024 / kvpress: 64); kept first.", ge=1)
    snapkv_kernel: int = spec(5, help="SnapKV: average-pooling kernel over positions (odd; kvpress: 5).", ge=1)

    def cross_field_errors(self) -> list[str]:
        return [] if self.snapkv_kernel % 2 else [f"snapkv_kernel: value {self.snapkv_kernel} must be odd"]


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
    max_segments: int = spec(0, help="Segments per corpus (0 = all), taken across articles: every article's "
                             "first segment, then every one's second, ...", ge=0)
    pile_tokens: int = spec(
        0, help="pile: score only the first segments of the split (after max_segments) whose recent, scored tokens "
        "reach this many (0 = every segment); Nugget2D §5.2 scores 'a held-out subset of the Pile ... of 100k tokens'.",
        ge=0)
    contexts: list[LMContextSetting] = spec(
        [LMContextSetting(128, 640, 64), LMContextSetting(64, 320, 32)],
        help="Context configurations (paper table 1: 128/640/64 and 64/320/32).",
    )
    systems: list[str] = spec(
        ["full", "compressive", "nugget2d", *STREAMING_PRESS_SYSTEMS],
        help="Systems; streaming_llm / key_norm: training-free presses keeping max(total - context) distant states "
        "(SnapKV needs a prompt's end and has no token-by-token form).",
        choices=("full", "compressive", "nugget2d", *STREAMING_PRESS_SYSTEMS), nonempty=True)
    wiki_oov_token: str = spec("<unk>", help="OOV marker of the wiki corpus, excluded from PPL ('' = none).")
    baseline_adapter: str = spec(
        "none", help="Weights of Full / Compressive: none = base LM, decoder = the AR Nugget2D's theta, "
        "trained = each baseline's own training (train.nugget2d_ar.baselines; Nugget2D §5.1).",
        choices=("none", "decoder", "trained"),
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
    match: str = spec(
        "substring", help="Accuracy test after app. D's normalisation, against every gold answer: "
        "substring (app. D) or word (containment on word boundaries).", choices=("substring", "word"),
    )
    systems: list[str] = spec(
        ["full", "nodoc", "lmsumm", "nugget2d", *PRESS_SYSTEMS],
        help="Systems; the presses run at each of nugget_ratios (Nugget2D's KV budget).",
        choices=("full", "nodoc", "lmsumm", "nugget2d", *PRESS_SYSTEMS), nonempty=True)

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
    systems: list[str] = spec(
        ["full_zs", "full_ft", "nugget2d_ft", *PRESS_SYSTEMS],
        help="Systems (table 4); the presses compress the base LM's KV at nugget_ratio.",
        choices=("full_zs", "full_ft", "nugget2d_ft", *PRESS_SYSTEMS), nonempty=True)


@dataclass
class AutoencodingEval:
    """eval_nugget2d_ae (Nugget2D §4, fig. 5; §4.3): reconstruction BLEU against document
    length, and which tokens the autoencoder's scorer makes nuggets."""

    split: str = spec("test", help="Split of build_lm's continuation windows.", choices=SPLITS)
    lengths: list[int] = spec(
        [64, 128, 256, 512], help="Document lengths (tokens): the first L tokens of each window holding L.",
        nonempty=True, unique=True, ge=1)
    max_docs: int = spec(0, help="Windows per length (0 = all that hold it), taken across documents: every "
                         "document's first window, then every one's second, ...", ge=0)
    batch_size: int = spec(8, help="Documents decoded together.", ge=1)
    extra_tokens: int = spec(16, help="Greedy decoding writes up to L + this many tokens (stops at EOS).", ge=0)
    analysis_docs: int = spec(128, help="Documents of the nugget-token statistics (§4.3: 128).", ge=1)
    top_tokens: int = spec(8, help="Most frequent nugget tokens listed.", ge=1)
    highlight_docs: int = spec(4, help="Documents written with their nuggets marked (appendix B).", ge=0)


# eval_harness's systems (`stages.nugget2d.harness.lm`'s ``system`` argument) and the local tasks
# the stage writes from build_lm's records (`stages.nugget2d.harness.tasks`); any other task name
# is one lm-evaluation-harness registers (its hub datasets: a user with network)
HARNESS_SYSTEMS = ("nugget2d", "full", *PRESS_SYSTEMS, "nodoc")
WHOLE_CONTEXT = "full_whole"  # eval_harness's row of Full at r = 1 (HarnessEval.whole_context)
LOCAL_HARNESS_TASKS = ("nugget_qa", "nugget_qa_choice", "nugget_cloze", "nugget_lm_wiki", "nugget_lm_pile")


@dataclass
class HarnessEval:
    """eval_harness: the systems as lm-evaluation-harness models on its tasks (docs/harness.md)."""

    enabled: bool = spec(False, help="Put eval_harness in the DAG (needs the harness extra: "
                         "pip install -e '.[harness]'); off: the stage is absent and lm_eval is never imported.")
    tasks: list[str] = spec(
        ["nugget_qa", "nugget_qa_choice", "nugget_cloze", "nugget_lm_wiki"], nonempty=True, unique=True,
        help=f"Harness tasks: the local ones written from build_lm's records ({', '.join(LOCAL_HARNESS_TASKS)}) "
        "or any task lm-evaluation-harness registers (downloads its dataset: network).")
    split: str = spec("test", help="Split of build_lm's records the local tasks are built from.", choices=SPLITS)
    limit: int = spec(0, help="Examples per task (0 = all): lm_eval's --limit.", ge=0)
    num_fewshot: int = spec(0, help="Few-shot examples per prompt (lm_eval's --num_fewshot).", ge=0)
    systems: list[str] = spec(list(HARNESS_SYSTEMS), help="Systems, all at the KV budget of ratio.",
                              choices=HARNESS_SYSTEMS, nonempty=True, unique=True)
    ratio: float = spec(0.1, help="KV budget of every system: ceil(ratio n) positions for n compressed tokens.",
                        gt=0.0, le=1.0)
    whole_context: bool = spec(True, help=f"Also a row {WHOLE_CONTEXT!r}: Full reading the whole context (r = 1), the "
                               "reference that shows how much a task needs its context at all.")
    context: str = spec("recent", help="whole: the context is compressed but its last token; recent: all but "
                        "its last recent_tokens tokens, read as plain tokens.", choices=("whole", "recent"))
    recent_tokens: int = spec(32, help="context=recent: the context's last tokens read uncompressed.", ge=1)
    batch_size: int = spec(1, help="Requests per model call.", ge=1)
    max_gen_toks: int = spec(32, help="generate_until: most tokens generated.", ge=1)
    bootstrap_iters: int = spec(1000, help="lm_eval's bootstrap resamples for the stderr of non-mean metrics "
                                "(perplexities; 0 = none).", ge=0)
    cloze_choices: int = spec(4, help="nugget_cloze / nugget_qa_choice: candidates (one true: the next sentence / "
                              "the answer; the rest from other documents / other questions).", ge=2)


@dataclass
class EfficiencyEval:
    """eval_efficiency: Nugget2D's decoding cost beside the full model's and the presses', on the
    run's device (ms per generated token, KV bytes, prefill time, each beside its memory-bandwidth
    bound), and one training step of Nugget2D vs Full fine-tuning (docs/performance.md)."""

    contexts: list[int] = spec(
        [1024, 4096, 8000], nonempty=True, unique=True, ge=1,
        help="Document lengths (tokens) decoded after; each plus prompt, warmup_tokens and steps must fit the "
        "base LM's positions. The findings read the shortest one of at least 4,096.")
    ratios: list[float] = spec([0.1, 0.05], nonempty=True, unique=True,
                               help="Nugget2D's ratios (the trained compressor compressing at each), and the presses' "
                               "KV budgets.")
    presses: list[str] = spec(["snapkv"], unique=True, choices=PRESS_SYSTEMS,
                              help="Training-free presses measured at each ratio (eval.presses' settings).")
    split: str = spec("test", help="Split of build_lm's qa.jsonl whose documents, concatenated, are the context; "
                      "its first question's prompt follows it.", choices=SPLITS)
    warmup_tokens: int = spec(2, help="Tokens generated before the timed ones: a decode of warmup_tokens is "
                              "subtracted from one of warmup_tokens + steps, so the document pass, cache setup and "
                              "prompt prefill cancel out.", ge=1)
    steps: int = spec(8, help="Timed tokens per repeat.", ge=1)
    repeats: int = spec(20, help="Timed repeats per system and context, interleaved across systems (the unit a "
                        "finding pairs and resamples; an interval needs 20).", ge=1)
    prefill_repeats: int = spec(1, help="Timed document passes (prefill / compression) per system and context.",
                                ge=1)
    bandwidth_mb: int = spec(256, help="Size of each buffer of the memory-bandwidth measurement (a STREAM-like "
                             "copy; larger than the caches).", ge=1)
    train_tokens: int = spec(512, help="Document tokens of the training-step comparison (0 = no training step).",
                             ge=0)
    train_answer_tokens: int = spec(32, help="Answer tokens (the loss) of each training step.", ge=1)
    train_batch: int = spec(1, help="Rows per training step.", ge=1)
    train_steps: int = spec(2, help="Timed training steps per system (after one untimed).", ge=1)

    def cross_field_errors(self) -> list[str]:
        return [f"ratios: value {r!r} must be in (0, 1)" for r in self.ratios if not 0 < r < 1]
