"""Config sections of the dataset stages (``data.*``); see :mod:`stages.config.schema`."""

from __future__ import annotations

from dataclasses import dataclass

from stages.config.validate import spec

# candidates per task = negatives + the answer: every evaluated system encodes and scores
# each of them per query, so tens of thousands (a typo) is hours of BM25 mining and
# scoring, and more than build_rr's pool of other sections fails the stage after Ray starts
MAX_NEGATIVES = 999

# the published datasets the builders load by name from the hub
# (`stages.corpora.paper_sources.load_rows`): source -> (hub dataset, default config)
HF_NAMES = {
    "wmt19": ("wmt19", "zh-en"),
    "wikitext103": ("wikitext", "wikitext-103-raw-v1"),
    "squad": ("squad", None),
    "cnn_dailymail": ("cnn_dailymail", "3.0.0"),
    "pile": ("monology/pile-uncopyrighted", None),
    "c4_realnewslike": ("allenai/c4", "realnewslike"),
}
# the fields naming a local copy of such a dataset: while one is empty, the stage reading it
# (`Stage.external_paths`) loads the dataset by name, for the section's ``source``s listed
# (source -> HF_NAMES entry); the preflight checks the hub answers then
# (`stages.framework.preflight_hub`)
HUB_READS = {
    "data.mt.local_files": {"wmt19": "wmt19"},
    "data.rr.local_files": {"wikitext103": "wikitext103"},
    "data.lm.squad_files": {"paper": "squad"},
    "data.lm.cnn_files": {"paper": "cnn_dailymail"},
    "data.lm.pile_files": {"paper": "pile"},
    "data.lm.wiki_files": {"paper": "wikitext103"},
    "data.nugget_lm.wiki_files": {"wikitext103": "wikitext103"},
    "data.re.local_files": {"c4_realnewslike": "c4_realnewslike"},
}


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


RE_OFFLINE_SOURCES = ("gensim_wiki", "python_docs", "gensim_lee", "sword_bible")


@dataclass
class REData:
    """build_re_data (RE §4.1): texts of 1 / 3 / 5 consecutive sentences to restore."""

    source: str = spec(
        "gensim_wiki", help="c4_realnewslike: C4 RealNewsLike train / validation as published (the paper); "
        "an offline corpus's sentences (a labelled stand-in, split here by document).",
        choices=("c4_realnewslike", *RE_OFFLINE_SOURCES),
    )
    local_files: str = spec(
        "", help="c4_realnewslike: a local copy in the HF layout (glob of json/parquet files naming the split "
        "with {split}: train / validation); empty = load allenai/c4 realnewslike by name.",
    )
    sentence_counts: list[int] = spec(
        [1, 3, 5], help="Sentences per example: one dataset per count.", nonempty=True, unique=True, ge=1
    )
    max_train_examples: int = spec(0, help="Train examples kept per count, a seeded sample (0 = all).", ge=0)
    max_dev_examples: int = spec(0, help="Dev examples kept per count, a seeded sample (0 = all).", ge=0)
    dev_fraction: float = spec(
        0.05, help="Offline sources: documents held out for dev (C4: 0, dev is its validation split).",
        ge=0.0, lt=0.5,
    )
    max_words: int = spec(
        0, help="Drop windows of more than this many whitespace words (counted; 0 = keep all).", ge=0
    )
    sentence_splitter: str = spec(
        "punkt", help="punkt: NLTK's Punkt (the paper's NLTK sentence tokenizer), trained here on the source's "
        "train documents (NLTK's pretrained English parameters are data, not downloaded); rules: the project's "
        "rule-based splitter (stages/corpora/text.py: no abbreviations, so 'Mr.' or 'U.S.' ends a sentence).",
        choices=("punkt", "rules"),
    )
    punkt_train_documents: int = spec(
        10000, help="punkt: the first this many train documents (source order) Punkt learns from (0 = all).", ge=0
    )

    def cross_field_errors(self) -> list[str]:
        errors = []
        if self.source == "c4_realnewslike":
            if self.dev_fraction:
                errors.append(f"dev_fraction: value {self.dev_fraction!r} must be 0 with source 'c4_realnewslike' "
                              "(dev is its published validation split)")
            if self.local_files and "{split}" not in self.local_files:
                errors.append(f"local_files: {self.local_files!r} must name the split with '{{split}}' "
                              "(e.g. /data/c4/realnewslike/c4-{split}.*.json.gz)")
            return errors
        if self.local_files:
            errors.append(f"local_files: {self.local_files!r} is read only with source 'c4_realnewslike' "
                          f"(source is {self.source!r}); use ''")
        if not self.dev_fraction:
            errors.append(f"dev_fraction: must be > 0 with source {self.source!r} (it has no published dev "
                          "split: dev documents are held out here)")
        return errors


@dataclass
class RERetrievalData:
    """build_re_retrieval (RE §4.4, tables 4, 9): queries with positive / hard negative
    passages to train bi-encoders on, held-out queries and the passages they retrieve from."""

    source: str = spec(
        "rr_tasks", help="dpr_nq: Natural Questions as DPR released it (the paper; local files below); rr_tasks: "
        "build_rr's reranking tasks (a labelled stand-in; queries split here).", choices=("dpr_nq", "rr_tasks"),
    )
    nq_train_file: str = spec("", help="dpr_nq: DPR's biencoder-nq-train.json.")
    nq_dev_file: str = spec("", help="dpr_nq: DPR's biencoder-nq-dev.json.")
    nq_test_file: str = spec("", help="dpr_nq: DPR's nq-test.qa.csv (question, answers).")
    passages_file: str = spec("", help="dpr_nq: DPR's psgs_w100.tsv (21M Wikipedia passages, read in place).")
    train_fraction: float = spec(0.5, help="rr_tasks: share of the queries trained on (the rest are tested).",
                                 gt=0.0, lt=1.0)
    dev_fraction: float = spec(0.1, help="rr_tasks: share of the training queries kept for the dev loss.",
                               gt=0.0, lt=0.5)

    def cross_field_errors(self) -> list[str]:
        files = ("nq_train_file", "nq_dev_file", "nq_test_file", "passages_file")
        if self.source == "dpr_nq":
            return [f"{k}: must name DPR's file with source 'dpr_nq'" for k in files if not getattr(self, k)]
        return [f"{k}: value {getattr(self, k)!r} is read only with source 'dpr_nq'" for k in files if getattr(self, k)]


@dataclass
class DataSection:
    seed: int = spec(0, help="Seed of every sampling step of the builders.", ge=0)
    max_docs: int = spec(0, help="Cap on documents per builder (0 = all); tiny profile caps.", ge=0)
    corpus_stats: CorpusStatsData = spec(CorpusStatsData(), help="corpus_stats stage.")
    mt: MTData = spec(MTData(), help="build_mt_docs stage.")
    pi: PIData = spec(PIData(), help="build_pi stage.")
    rr: RRData = spec(RRData(), help="build_rr stage.")
    lm: LMData = spec(LMData(), help="build_lm stage.")
    nugget_lm: NuggetLMData = spec(NuggetLMData(), help="build_nugget_lm stage (Nugget LM, Nugget table 3).")
    bm25: BM25Params = spec(BM25Params(), help="BM25 used for negatives mining.")
    re: REData = spec(REData(), help="build_re_data stage (RE restoration texts).")
    re_retrieval: RERetrievalData = spec(RERetrievalData(), help="build_re_retrieval stage (RE passage retrieval).")
