"""Config sections of the Nugget study: its datasets (``data.mt``, ``data.pi``, ``data.rr``,
``data.nugget_lm``), training jobs (``train.nugget``, ``train.nugget_lm``, ``train.sweep``) and
evaluations (``eval.baselines``, ``eval.nugget_lm``). The schema (`stages.config.schema`) places
each at its path; YAML files in ``conf/`` set them."""

from __future__ import annotations

from dataclasses import dataclass

from stages.config.job import TrainJob
from stages.config.validate import SPLITS, spec

# candidates per task = negatives + the answer: every evaluated system encodes and scores
# each of them per query, so tens of thousands (a typo) is hours of BM25 mining and
# scoring, and more than build_rr's pool of other sections fails the stage after Ray starts
MAX_NEGATIVES = 999


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
    src_lang: str = spec("en_XX", help="mBART-50 language code of the corpus's source side (pretrained "
                         "tokenizers); every objective codes each side with its text's language (AE: this on both).")
    tgt_lang: str = spec("zh_CN", help="mBART-50 language code of the corpus's target side (pretrained "
                         "tokenizers): MT's labels; AE on this side (app. D) codes both sides with it.")
    max_doc_tokens: int = spec(128, help="Subwords per concatenated document.", ge=8)
    ae_sources: list[str] = spec(
        [], help="English-only offline corpora packed into extra autoencoding training documents "
        "(split train_ae; MT training, dev and test never read it).",
        choices=("sword_bible", "gensim_wiki", "python_docs", "gensim_lee"),
    )
    dev_split: str = spec(
        "", help="source=wmt19: the published split read as dev ('validation': WMT19's official dev set, "
        "Nugget §5.1); '' = dev_fraction of the documents of hf_split.",
    )
    dev_fraction: float = spec(0.05, help="Documents held out for dev (0 with dev_split).", ge=0.0, lt=0.5)
    test_fraction: float = spec(0.05, help="Documents held out for test.", ge=0.0, lt=0.5)

    def cross_field_errors(self) -> list[str]:
        if not self.dev_split:
            return []
        if self.source != "wmt19":
            return [f"dev_split: value {self.dev_split!r} needs source 'wmt19' (the {self.source} source has no "
                    "published dev set); use ''"]
        errors = []
        if self.dev_split == self.hf_split:
            errors.append(f"dev_split: value {self.dev_split!r} is hf_split, the training documents' split")
        if self.dev_fraction:
            errors.append(f"dev_fraction: value {self.dev_fraction!r} must be 0 with dev_split "
                          f"{self.dev_split!r} (dev is the published split)")
        if self.local_files and "{split}" not in self.local_files:
            errors.append(f"local_files: {self.local_files!r} must name the split with '{{split}}' for dev_split "
                          f"{self.dev_split!r} (e.g. /data/wmt19/{{split}}-*.parquet)")
        return errors


@dataclass
class PIData:
    """build_pi (Nugget §6.1, app. A.1): paraphrase identification with BM25 negatives."""

    source: str = spec("sword_bible", help="Paraphrase pairs.", choices=("sword_bible", "parabank"))
    parabank_path: str = spec("", help="Local ParaBank v1 file (source=parabank).")
    max_doc_tokens: int = spec(256, help="Tokens per document.", ge=8)
    keep_prob: float = spec(0.8, help="Each sentence kept with this probability per side.", gt=0.0, le=1.0)
    negatives: int = spec(19, help=f"BM25 negatives per query (the paper: 19; at most {MAX_NEGATIVES}).", ge=1,
                          le=MAX_NEGATIVES)
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
    negatives: int = spec(
        19, help="BM25 negatives per query, drawn from the sections of the other articles (the paper: 19; at most "
        f"{MAX_NEGATIVES}; more than the source's pool of sections fails build_rr).", ge=1, le=MAX_NEGATIVES,
    )


@dataclass
class BM25Params:
    """bm25s settings; BM25 tokens = lowercased Unicode word runs (\\w+), no stemming/stopwords."""

    variant: str = spec(
        "lucene", help="bm25s scoring variant.", choices=("lucene", "robertson", "atire", "bm25l", "bm25+")
    )
    k1: float = spec(1.5, help="Term-frequency saturation.", gt=0.0)
    b: float = spec(0.75, help="Length normalisation.", ge=0.0, le=1.0)


@dataclass
class NuggetLMData:
    """build_nugget_lm (Nugget §6.2, table 3): Wikipedia articles for the Nugget LM."""

    source: str = spec(
        "gensim_wiki", help="gensim_wiki: the offline Wikipedia articles (a WikiText-103 stand-in, split here); "
        "wikitext103: WikiText-103 train / validation / test as published.", choices=("gensim_wiki", "wikitext103"),
    )
    max_docs: int = spec(0, help="Articles read (0 = all; the tiny profile caps training cost here).", ge=0)
    min_doc_tokens: int = spec(2, help="Articles with fewer tokens are dropped (nothing to predict).", ge=2)
    dev_fraction: float = spec(0.05, help="gensim_wiki: articles held out for dev.", ge=0.0, lt=0.5)
    test_fraction: float = spec(0.05, help="gensim_wiki: articles held out for test.", gt=0.0, lt=0.5)
    wiki_files: str = spec("", help="wikitext103: a local copy (glob, HF layout, {split} = the HF split); "
                           "empty = by name.")
    wikitext_config: str = spec(
        "wikitext-103-v1", help="wikitext103: v1 keeps <unk>, the out-of-vocabulary words the paper's PPL excludes.",
        choices=("wikitext-103-v1", "wikitext-103-raw-v1"),
    )

    def cross_field_errors(self) -> list[str]:
        if self.source == "wikitext103" and self.wiki_files and "{split}" not in self.wiki_files:
            return [f"wiki_files: {self.wiki_files!r} must name the split ({{split}}): the table is on the official test split"]
        return []


@dataclass
class NuggetTrainJob(TrainJob):
    objective: str = spec("ae", help="ae: reconstruct the source; mt: translate.", choices=("ae", "mt"))
    deletion_noise: float = spec(
        0.0, help="AE input token-deletion probability (TSDAE baseline: 0.6).", ge=0.0, lt=1.0
    )


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
