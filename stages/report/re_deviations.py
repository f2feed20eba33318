"""The RE study's settings this run does not follow (RE §4.1, app. A / B; `stages.report.deviations`
lists every study's), each checked against the run's configuration."""

from __future__ import annotations

import math

from stages.config.job import TrainJob
from stages.report.deviation import Config, Deviation
from stages.report.tables import seq2seq_base
from stages.restorable.config import RE_CONFIGS, RE_DECODERS, RE_POOLINGS


def _optimiser(job: TrainJob) -> str:
    return f"{job.optimizer} lr {job.lr:g}, weight decay {job.weight_decay:g}, {job.schedule} schedule, " \
           f"{job.warmup_steps} warm-up steps"


def re_deviations(cfg: Config) -> list[Deviation]:
    """The RE study's settings (RE §4.1, app. A / B) this run does not follow."""
    out: list[Deviation] = []
    model, data, train, retrieval = cfg("model.re"), cfg("data.re"), cfg("train.re"), cfg("train.re_retrieval")
    if model.source != "pretrained" or "t5-small" not in model.name_or_path.lower():
        seq2seq = cfg("model.seq2seq")
        here = (model.name_or_path if model.source == "pretrained" else
                f"stage_ae: the {seq2seq_base(seq2seq)} train_nugget trained (AE), its nugget parts removed: the "
                "encoder-decoder this profile has pretrained offline")
        out.append(Deviation("model.re", "T5-small with its pretrained weights: 6 + 6 layers, d_model = d_repr = 512 "
                             "(RE §4.1, app. A)", here))
    if data.source != "c4_realnewslike":
        out.append(Deviation("data.re.source", "C4 RealNewsLike (13M train / 13,863 validation documents) split into "
                             "sentences by NLTK (RE §4.1)", f"{data.source}: offline sentences stand in"))
    # NLTK's English Punkt parameters are data (nltk_data), never downloaded: no profile reaches the paper's
    out.append(Deviation(
        "data.re.sentence_splitter", "NLTK's sentence tokenizer: Punkt with NLTK's pretrained English parameters "
        "(RE §4.1)",
        f"Punkt (NLTK's code) trained here on {_punkt_documents(data.punkt_train_documents)} train documents of "
        f"{data.source}: NLTK's English parameters are data that is not downloaded"
        if data.sentence_splitter == "punkt" else
        "the rule-based splitter of stages/corpora/text.py: no abbreviations, so 'Mr.' or 'U.S.' ends a sentence"))
    cut = [f"at most {data.max_train_examples} train texts per sentence count"] if data.max_train_examples else []
    cut += [f"texts of more than {data.max_words} words dropped"] if data.max_words else []
    # the steps never follow the data: an epoch of C4 RealNewsLike's windows is not counted before training
    out.append(Deviation(
        "data.re.max_train_examples / max_words, train.re.max_steps", "1 epoch over every train text (RE §4.1)",
        "; ".join([*cut, f"{train.max_steps} steps of {train.examples_per_step()} texts per model, whatever the epoch's size: "
                         "sized for this profile"])))
    if (train.optimizer, train.schedule) != ("adamw", "linear") or not math.isclose(train.lr, 1e-3) \
            or not math.isclose(train.weight_decay, 1e-2) or not train.warmup_steps:
        out.append(Deviation("train.re (optimiser)", "AdamW, lr 1e-3, weight decay 1e-2, linear schedule with 10% "
                             "warm-up (RE app. A, table 6)", f"{_optimiser(train)}: set for this profile"))
    grid = (len(train.configs), len(train.poolings), len(train.decoders), len(train.sentence_counts))
    if grid != (len(RE_CONFIGS), len(RE_POOLINGS), len(RE_DECODERS), 3) or train.beyond_one_sentence != "all":
        out.append(Deviation(
            "train.re (grid)", "4 encoder configurations x 2 poolings x 3 decoders x 1 / 3 / 5 sentences (RE tables 2, "
            "3, 8)", f"configurations {train.configs}, poolings {train.poolings}, decoders {train.decoders}, "
            f"{train.sentence_counts} sentences, beyond one sentence {train.beyond_one_sentence}: the other cells are "
            "not run"))
    if not train.freeze_encoder_embedding and {"b", "d"} & set(train.configs):
        out.append(Deviation("train.re.freeze_encoder_embedding", "configurations (b) / (d) freeze the pretrained "
                             "encoder: only the projection (and in (d) the new layers) can change the embedding "
                             "(RE §4.2)", "false: the token embedding table the encoder shares with the decoder "
                             "(T5) trains, so the frozen encoder's input embeddings change"))
    if train.extra_layers != 3:
        out.append(Deviation("train.re.extra_layers", "3 randomly initialised layers in configurations (c) / (d) "
                             "(RE table 1)", f"{train.extra_layers}: sized for this profile's encoder"))
    re_eval = cfg("eval").re
    if re_eval.max_examples or data.max_dev_examples:
        built = f"a seeded sample of {data.max_dev_examples}" if data.max_dev_examples else "all of them"
        first = f"the first {re_eval.max_examples}" if re_eval.max_examples else "every one"
        split = "validation split" if data.source == "c4_realnewslike" else "dev split"
        out.append(Deviation(
            "eval.re.max_examples / data.re.max_dev_examples (RE restoration test set)",
            "the restoration scored on C4 RealNewsLike's validation split (13,863 articles, as 1 / 3 / 5-sentence "
            "texts; RE §4.1): every text, as read",
            f"{first} of build_re_data's dev texts per sentence count and model, in its seeded random order "
            f"(built: {built}, from {data.source}'s {split}): sized for this profile, every restoration model "
            "decoding them with beam search"))
    if cfg("eval").re.beam_size != 4:
        out.append(Deviation("eval.re.beam_size", "beam search with 4 beams, early stopping (RE app. A, table 6)",
                             f"{cfg('eval').re.beam_size} beams"))
    if cfg("data.re_retrieval").source != "dpr_nq":
        out.append(Deviation("data.re_retrieval.source", "Natural Questions as DPR released it: its train questions "
                             "with positive / hard negative passages; its test questions retrieving from 21,015,324 "
                             "Wikipedia passages, a hit being a passage containing an answer (RE §4.4)",
                             "rr_tasks: build_rr's reranking tasks split by query; a test query retrieves from every "
                             "passage of every task (a few thousand), a hit being its answer passage"))
    # what the batch size means to DPR's loss: the negatives each query is scored against
    batch, negatives = retrieval.examples_per_step(), retrieval.negatives_per_query()
    if batch != 128 or negatives != 255 or (retrieval.optimizer, retrieval.schedule) != ("adamw", "linear") \
            or not math.isclose(retrieval.lr, 1e-3):
        out.append(Deviation("train.re_retrieval", "40 epochs of batch 128, each query against the batch's 255 other "
                             "passages (in-batch negatives + 1 hard negative per query), AdamW lr 1e-3, linear "
                             "schedule, 20% warm-up (RE app. B, table 7)",
                             f"{retrieval.max_steps} steps of batch {batch}, {negatives} negatives per query, "
                             f"{_optimiser(retrieval)}: sized for this profile"))
    return out + _re_downstream_checked(cfg)


def _re_downstream_checked(cfg: Config) -> list[Deviation]:
    """RE table 10 (appendix E): the paper states neither its protocol nor its splits."""
    probe = cfg("eval").re_downstream
    out = [Deviation(
        "eval_re_downstream (protocol)", "not stated: accuracy 'when using the sentence embedding of the proposed "
        "model' (RE appendix E); its SST-2 91-92 / TREC fine 85-92 from T5-small are at fine-tuning levels",
        f"SentEval's (Conneau & Kiela 2018): a logistic-regression probe on the frozen embeddings (L2 from "
        f"{probe.l2_grid} on SST's dev split, by {probe.cv_folds}-fold cross-validation on TREC's train split; "
        f"{'standardised' if probe.standardize else 'raw'} embeddings), the encoders never fine-tuned"),
        Deviation("eval_re_downstream (tasks)", "table 10's GLUE MNLI, QNLI, WNLI, MRPC and QQP columns (sentence "
                  "pairs) and its 'SSTDataset' (85-86 accuracy: 5-class SST at that level is not reported anywhere, "
                  "so perhaps a binary SST)", "not run (single-sentence tasks only); SST fine-grained, 5 classes, "
                  "as its name in the paper's text reads")]
    data = cfg("data.re_downstream")
    if data.source != "published":
        out.append(Deviation("data.re_downstream.source", "GLUE SST-2, the SST and TREC (Li & Roth) in their "
                             "published splits (RE appendix E)", "stand_in: sentences of "
                             f"{', '.join(data.stand_in_sources)} labelled by source (TREC coarse's column) and by "
                             f"run of documents ({data.stand_in_groups} per source: TREC fine's); SST not run"))
    elif "sst2" in data.tasks:
        out.append(Deviation("data.re_downstream (SST-2 test)", "not stated (GLUE's test labels are unpublished)",
                             f"GLUE's dev split is the test split; {data.sst2_dev_fraction:g} of its train split is "
                             "the dev split that picks the probe's L2"))
    return out


def _punkt_documents(n: int) -> str:
    return f"the first {n}" if n else "all"
