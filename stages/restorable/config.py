"""Config sections of the restorable-embeddings study: its data (``data.re``, ``data.re_retrieval``),
training jobs (``train.re``, ``train.re_retrieval``) and evaluation (``eval.re``); its base model is
``model.re`` (`stages.config.schema`). The schema places each at its path; YAML files in ``conf/``
set them."""

from __future__ import annotations

from dataclasses import dataclass

from stages.config.job import TrainJob
from stages.config.validate import spec

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
class REEval:
    """eval_re_restoration (RE tables 2, 3, 8) and eval_re_retrieval (RE tables 4, 9)."""

    max_examples: int = spec(0, help="Dev texts restored per system (0 = all of build_re_data's dev split).", ge=0)
    beam_size: int = spec(4, help="Beams of the restoration decoding (RE table 6: 4, early stopping).", ge=1)
    extra_tokens: int = spec(8, help="Decode up to the text's own token length plus this many.", ge=0)
    batch_size: int = spec(16, help="Texts per batch (teacher-forced perplexity and decoding).", ge=1)
    recall_at: list[int] = spec([1, 5, 20, 100], help="Recall@k of the retrieval (RE table 9).", nonempty=True,
                                unique=True, ge=1)
    max_queries: int = spec(0, help="Test queries ranked per retrieval system (0 = all).", ge=0)


# RE table 10's sentence-level tasks (appendix E): GLUE SST-2, SST fine-grained, TREC coarse / fine
RE_DOWNSTREAM_TASKS = ("sst2", "sst5", "trec_coarse", "trec_fine")


@dataclass
class REDownstreamData:
    """build_re_downstream (RE appendix E, table 10): the sentence-classification tasks the RE
    embeddings are probed on, in their published splits, or an offline stand-in."""

    source: str = spec(
        "published", help="published: GLUE SST-2, SST fine-grained and TREC in their published layouts (the *_dir "
        "fields; an empty one loads the hub dataset by name: glue/sst2, SetFit/sst5, CogComp/trec); stand_in: a "
        "labelled stand-in from the offline corpora (trec_coarse: which source a sentence comes from; trec_fine: "
        "which group of its source's documents).", choices=("published", "stand_in"))
    tasks: list[str] = spec(list(RE_DOWNSTREAM_TASKS), help="Tasks built (stand_in: trec_coarse / trec_fine only).",
                            choices=RE_DOWNSTREAM_TASKS, unique=True, nonempty=True)
    sst2_dir: str = spec("", help="published: GLUE's SST-2 folder (train.tsv, dev.tsv: 'sentence<TAB>label' with a "
                         "header; GLUE's test labels are unpublished, so dev.tsv is the test split).")
    sst5_dir: str = spec("", help="published: SST fine-grained, either SetFit/sst5's files (train / dev / test "
                         ".jsonl: text, label, label_text) or the original PTB trees (trees/train.txt, dev.txt, "
                         "test.txt; the root's label 0-4 is the sentence's).")
    trec_dir: str = spec("", help="published: TREC as Li & Roth released it (train_5500.label, TREC_10.label: "
                         "'COARSE:fine question' per line).")
    sst2_dev_fraction: float = spec(
        0.05, help="sst2: share of GLUE's train split held out (seeded) as the dev split that picks the probe's "
        "regularisation (its dev split is our test split).", gt=0.0, lt=0.5)
    stand_in_sources: list[str] = spec(
        ["gensim_wiki", "python_docs", "gensim_lee"], help="stand_in: the offline corpora sentences are drawn from "
        "(trec_coarse: one class each).", choices=RE_OFFLINE_SOURCES, unique=True, nonempty=True)
    stand_in_groups: int = spec(3, help="stand_in: groups of consecutive documents per source (trec_fine: one class "
                                "each).", ge=2)
    stand_in_sentences: int = spec(400, help="stand_in: sentences drawn per class (seeded; fewer where a class "
                                   "has fewer).", ge=10)
    stand_in_test_fraction: float = spec(0.25, help="stand_in: share of each class's sentences held out for test "
                                         "(seeded); no dev split, as TREC: the probe's L2 is picked by "
                                         "cross-validation on train.", gt=0.0, lt=0.5)

    def cross_field_errors(self) -> list[str]:
        if self.source != "stand_in":
            return []
        errors = [f"tasks: {t!r} has no stand-in (stand_in builds trec_coarse / trec_fine)" for t in self.tasks
                  if not t.startswith("trec")]
        errors += [f"{k}: value {getattr(self, k)!r} is read only with source 'published'"
                   for k in ("sst2_dir", "sst5_dir", "trec_dir") if getattr(self, k)]
        if len(self.stand_in_sources) < 2:
            errors.append("stand_in_sources: needs two sources or more (trec_coarse's classes)")
        return errors


@dataclass
class REDownstreamEval:
    """eval_re_downstream (RE table 10): a SentEval-style probe (Conneau & Kiela 2018) on the frozen
    RE embeddings; the paper does not state its protocol (docs/restorable.md)."""

    pooling: str = spec("mean", help="Pooling of the train_re encoders probed (table 10 does not say; mean: the "
                        "one that restores, as train.re_retrieval).", choices=RE_POOLINGS)
    decoder: str = spec("gating", help="Decoder the probed encoders were trained with (the proposed one).",
                        choices=RE_DECODERS)
    configs: list[str] = spec(list(RE_CONFIGS), help="Configurations probed (RE table 1), every sentence count "
                              "train_re trained them on.", choices=tuple(RE_CONFIGS), unique=True, nonempty=True)
    pretrained_baselines: bool = spec(True, help="Also the pretrained encoder without restoration training (+ "
                                      "untrained projection; + untrained extra layers): the 'random initialize' rows.")
    l2_grid: list[float] = spec([1e-5, 1e-4, 1e-3, 1e-2], help="L2 penalties the probe picks from (SentEval's "
                                "grid, 10^-5..10^-2): on the dev split, or by cross-validation on train.",
                                nonempty=True, unique=True, ge=0.0)
    cv_folds: int = spec(5, help="Folds of the cross-validation on train that picks the L2 penalty of a task "
                         "without a dev split (TREC; SentEval's default k = 5).", ge=2)
    max_iter: int = spec(200, help="L-BFGS iterations of one probe fit (full batch).", ge=1)
    standardize: bool = spec(True, help="z-score each embedding dimension with the train split's mean / std "
                             "before the probe (SentEval does not; an L2 penalty means the same across encoders).")
    max_train: int = spec(0, help="Train examples per task (0 = all; a seeded sample otherwise).", ge=0)
    max_test: int = spec(0, help="Test examples per task (0 = all).", ge=0)
    max_tokens: int = spec(128, help="Truncation of a text, in tokens (the encoders' limit caps it).", ge=1)
    batch_size: int = spec(64, help="Texts embedded per batch.", ge=1)
