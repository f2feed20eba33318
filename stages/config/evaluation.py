"""Config sections of the evaluation and report stages (``eval.*``, ``report``); see
:mod:`stages.config.schema`. Training jobs live under ``train.*`` (the baselines':
``train.baselines``), calibration under ``calibrate.*``."""

from __future__ import annotations

from dataclasses import dataclass

from stages.config.calibrate import LM_CORPORA, SPLITS
from stages.config.validate import spec

# single-vector baselines and Nugget ablations trained by stage train_baselines
# (mirrors stages.nugget.train_baselines.SYSTEMS; tests/evaluation checks they stay equal)
BASELINE_SYSTEMS = (
    "tsdae_ae", "tsdae_mt", "re_cross", "re_gating", "nugget_mt", "chunk", "sentence", "nugget_r0033",
    "no_feedback", "nugget_ae_tgtlang", "nugget_mt_tgtlang",
)


@dataclass
class BaselinesSection:
    """Baselines of the Nugget evaluations (Nugget §6.1.2, §7.1; RE §3.3), one training each
    (stage train_baselines, job ``train.baselines``)."""

    systems: list[str] = spec(
        list(BASELINE_SYSTEMS),
        help="tsdae_ae/tsdae_mt: mean-pooled bottleneck (TSDAE); re_cross/re_gating: RE "
        "single vector with cross-attention / gating decoder (AE); nugget_mt: learned-selector "
        "reference of the Nugget table-4 ablations chunk, sentence, nugget_r0033, no_feedback (MT); "
        "nugget_ae_tgtlang/nugget_mt_tgtlang: Nugget AE / MT encoding the corpus's other language (app. D).",
        choices=BASELINE_SYSTEMS,
    )
    tsdae_deletion: float = spec(0.6, help="TSDAE input token-deletion probability.", ge=0.0, lt=1.0)
    sentence_ratio: float = spec(
        0.033, help="Ratio of the learned-selector twin of the sentence selector (paper: 3.3%).",
        gt=0.0, le=1.0,
    )


# --- Nugget2D evaluations: eval_lm, eval_qa, eval_summarization

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
    max_segments: int = spec(0, help="Segments per corpus (0 = all).", ge=0)
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
    max_docs: int = spec(0, help="Documents per length (0 = all that hold it).", ge=0)
    batch_size: int = spec(8, help="Documents decoded together.", ge=1)
    extra_tokens: int = spec(16, help="Greedy decoding writes up to L + this many tokens (stops at EOS).", ge=0)
    analysis_docs: int = spec(128, help="Documents of the nugget-token statistics (§4.3: 128).", ge=1)
    top_tokens: int = spec(8, help="Most frequent nugget tokens listed.", ge=1)
    highlight_docs: int = spec(4, help="Documents written with their nuggets marked (appendix B).", ge=0)


@dataclass
class NuggetLMEval:
    """eval_nugget_lm (Nugget §6.2, table 3): word-level perplexity of the Nugget LMs and
    their baselines, out-of-vocabulary words excluded."""

    split: str = spec("test", help="Split of build_nugget_lm's articles (the paper: WikiText-103 test).",
                      choices=SPLITS)
    histories: list[int] = spec([1, 2, 4, 8], help="h evaluated for every system with a memory (the "
                                "transformer: h = 0).", nonempty=True, ge=1, unique=True)
    stride: int = spec(64, help="Tokens scored per window: windows of segment_tokens start every stride tokens, "
                       "so a scored token reads >= segment_tokens - stride preceding tokens (must divide "
                       "train.nugget_lm.segment_tokens); 1 = every token reads min(its position, segment_tokens - 1) "
                       "(app. B.2: as many as possible), at segment_tokens times the passes of tiling.", ge=1)
    max_docs: int = spec(0, help="Articles evaluated (0 = all).", ge=0)
    max_doc_tokens: int = spec(0, help="Score the first N tokens of each article (0 = all).", ge=0)
    batch_size: int = spec(16, help="Windows per forward pass.", ge=1)


@dataclass
class REEval:
    """eval_re_restoration (RE tables 2, 3, 8) and eval_re_retrieval (RE tables 4, 9)."""

    max_examples: int = spec(0, help="Dev texts restored per system (0 = all of build_re_data's dev split).", ge=0)
    beam_size: int = spec(4, help="Beams of the restoration decoding (RE table 6: 4, early stopping).", ge=1)
    extra_tokens: int = spec(8, help="Decode up to the text's own token length plus this many.", ge=0)
    batch_size: int = spec(16, help="Texts per batch (teacher-forced perplexity and decoding).", ge=1)
    recall_at: list[int] = spec([1, 5, 20, 100], help="Recall@k of the retrieval (RE table 9).", nonempty=True,
                                unique=True, ge=1)
    max_queries: int = spec(0, help="Test queries ranked per retrieval system (0 = all).", ge=0)


@dataclass
class EvalSection:
    dtype: str = spec(
        "fp32", help="Weights / activations of every evaluated, calibrated or analysed model "
        "(bf16: the GPU setting; honoured on CPU too, slowly).", choices=("fp32", "bf16"),
    )
    beam_size: int = spec(5, help="Beam size for reconstruction decoding.", ge=1)
    reconstruction_extra_tokens: int = spec(
        16, help="eval_reconstruction decodes up to the longest reference of the documents (in the "
        "model's tokens) plus this many: whole documents (no fixed cap).", ge=0,
    )
    max_examples: int = spec(0, help="Evaluate at most this many examples (0 = all).", ge=0)
    max_tasks: int = spec(0, help="PI / RR tasks per dataset (0 = all).", ge=0)
    batch_size: int = spec(16, help="Documents per encoder / decoder batch.", ge=1)
    pi_data_dir: str = spec(
        "", help="Authors' released nugget-data PI folder (docs.txt + task.jsonl); empty = build_pi's."
    )
    rr_data_dir: str = spec("", help="Same for RR; empty = build_rr's output.")
    analysis_docs: int = spec(128, help="Documents for nugget token statistics (paper fig. 5: 128).", ge=1)
    nugget_split: str = spec(
        "dev", help="Split of build_mt_docs that eval_reconstruction (fig. 4) and analyze_nuggets (figs. 5-8) read: "
        "dev as the paper (WMT19's dev set); test where a profile's settings were chosen on dev (profile=small).",
        choices=("dev", "test"))
    highlight_docs: int = spec(4, help="Documents shown on the highlighted-nuggets page (fig. 6).", ge=1)
    probe_docs: int = spec(64, help="Documents of the probability-gain probe (figs. 7-8).", ge=1)
    baselines: BaselinesSection = spec(BaselinesSection(), help="Baseline systems (train_baselines stage).")
    presses: PressSection = spec(PressSection(), help="Training-free KV presses (eval_qa, eval_summarization, eval_lm).")
    lm: LMEval = spec(LMEval(), help="eval_lm stage.")
    qa: QAEval = spec(QAEval(), help="eval_qa stage.")
    summarization: SummarizationEval = spec(SummarizationEval(), help="eval_summarization stage.")
    autoencoding: AutoencodingEval = spec(AutoencodingEval(), help="eval_nugget2d_ae stage (Nugget2D §4).")
    nugget_lm: NuggetLMEval = spec(NuggetLMEval(), help="eval_nugget_lm stage (Nugget table 3).")
    re: REEval = spec(REEval(), help="eval_re_restoration / eval_re_retrieval stages (the RE study).")


@dataclass
class ReportSection:
    title: str = spec("nugget-pipeline report", help="Title of the report artifact.")
