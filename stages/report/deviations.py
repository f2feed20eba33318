"""What stays different from the papers' setups in this run, and why (the report's list).

Each entry is checked against the run's configuration, so the list names exactly the
settings of the profile in use; entries of the last group hold in every profile (what the
code does not reproduce yet). The report shows them under "Differences from the papers".
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

from stages.config.job import TrainJob
from stages.corpora.paper_sources import HF_NAMES
from stages.report.budgets import training_budgets
from stages.report.tables import PAPER_SCORER_LAYER, seq2seq_base
from stages.restorable.config import RE_CONFIGS, RE_DECODERS, RE_POOLINGS

Config = Callable[[str], Any]  # a config path -> its section (the report's ReportConfig by path)


@dataclass(frozen=True)
class Deviation:
    setting: str  # what, in the config's words
    paper: str  # the papers' setting (with its section)
    here: str  # this run's setting and why


def _checked(cfg: Config) -> list[Deviation]:
    out: list[Deviation] = []
    seq2seq, lm, compressor = cfg("model.seq2seq"), cfg("model.lm"), cfg("train.nugget2d")
    if seq2seq.source != "pretrained" or "mbart-large-50" not in seq2seq.name_or_path:
        out.append(Deviation(
            "model.seq2seq", "mBART-50 large, fine-tuned (Nugget §5.1, app. B.1)",
            f"{seq2seq.source} {seq2seq.name_or_path or '(random-init BART, tokenizer trained on the corpus)'}: "
            "no pretrained encoder-decoder is available offline / on CPU"))
    if seq2seq.source != "pretrained":
        out.append(Deviation(
            "ColBART (Nugget §6.1.2)", "last hidden states of the pretrained mBART encoder",
            "no pretrained encoder: the HF weights of our MT-trained Nugget model, read as a plain encoder"))
    out += _lm_checkpoints(lm)
    if compressor.objective != "autoencoding" and compressor.ar_scorer == "autoencoding":
        out.append(Deviation(
            "the AR scorer's autoencoding compressor (Nugget2D §2.5)",
            "the scorer of the autoencoding experiments (§4: on LLaMA-7B)",
            "an autoencoding compressor on the AR model's own base LM (model.lm.name_or_path): a scorer reads the "
            "frozen features of the LM it runs in; §4's own autoencoders (train_nugget2d_ae) train separately"))
    ae = cfg("train.nugget2d_ae")
    if ae.icae:
        out.append(Deviation(
            "ICAE (Nugget2D §4, fig. 5)", "ICAE's published numbers (Ge et al.: 128 memory slots for 512 tokens, "
            "pretrained by its authors; their code was not released)",
            f"trained beside Nugget2D with the same data, job and loss; ceil(r x {ae.max_doc_tokens}) slots per "
            "ratio, re-encoded by theta (nugget_core/nugget2d/icae.py)"))

    if cfg("eval").nugget_split != "dev":
        out.append(Deviation(
            "eval.nugget_split", "fig. 4's reconstruction BLEU and figs. 5-8's analyses on the dev set (WMT19's, "
            "Nugget §5.1-5.3)", f"build_mt_docs' {cfg('eval').nugget_split} split: this profile's settings were "
            "chosen on the dev split, so its tables score documents no setting was chosen on"))

    for name in ("nugget", "nugget2d"):
        method = cfg(name)
        if method.residual != "direct":
            out.append(Deviation(
                f"{name}.residual", "direct: the scores change the forward pass (eq. 5)",
                f"{method.residual}: the reference package's default; with straight_through the forward pass is "
                "the plain model's and only the scorer's gradient carries s"))
        if not method.scale_residual:
            out.append(Deviation(f"{name}.scale_residual", "(q k^T + s) / sqrt(d) (eq. 5)",
                                 "s added to the scaled logits unscaled"))
    layer = cfg("nugget").scorer_layer
    if layer != PAPER_SCORER_LAYER:
        out.append(Deviation(
            "nugget.scorer_layer", f"l = {PAPER_SCORER_LAYER} for every Nugget model but table 4's layer ablation "
            "(Nugget §3.3, §7.1)", f"l = {layer}: sized for this profile's encoder; the report sets the models of "
            f"l = {layer} beside the paper's l = {PAPER_SCORER_LAYER} rows (tables 2, 4, figs. 4, 5)"))
    if compressor.objective != "autoencoding" and compressor.ar_scorer != "autoencoding":
        out.append(Deviation(
            "train.nugget2d.ar_scorer (the AR model's scorer)", "the autoencoding compressor's scorer (§2.5)",
            f"compressor: train_nugget2d_ar reuses the scorer of the QA compressor (objective "
            f"{compressor.objective}); an autoencoding compressor is one more training (set ar_scorer: autoencoding)"))
    nugget2d, doc_tokens = cfg("nugget2d"), cfg("data.lm").doc_tokens
    scorer_context = nugget2d.scorer_window or nugget2d.recent_window
    if scorer_context < doc_tokens:
        out.append(Deviation(
            "nugget2d.scorer_window (AR mode)", "the scorer sees the context it was trained with (§2.5)",
            f"{scorer_context} tokens, against documents of up to data.lm.doc_tokens={doc_tokens} in the "
            "compressor's training: a shorter window bounds the scorer's memory in decoding"))
    own_models = {nugget2d.ratio, *compressor.extra_ratios}
    for ratio in cfg("eval").qa.nugget_ratios:
        if ratio not in own_models:
            out.append(Deviation(
                f"Nugget2D {1 / ratio:g}x in QA (Nugget2D §6.2)", f"a model trained at r = {ratio:g}",
                f"the r = {nugget2d.ratio:g} model compressing at {ratio:g} (add {ratio:g} to "
                "train.nugget2d.extra_ratios: one more training)"))
    mt, lmdata = cfg("data.mt"), cfg("data.lm")
    if mt.source != "wmt19":
        out.append(Deviation("data.mt.source", "WMT19 en-zh documents <= 128 tokens (Nugget §5.1)",
                             f"{mt.source}: an offline parallel corpus stands in"))
    elif not mt.dev_split:
        out.append(Deviation("data.mt.dev_split", "WMT19's official dev set (Nugget §5.1)",
                             f"dev = {mt.dev_fraction:g} of the {mt.hf_split} documents"))
    if lmdata.source != "paper":
        out.append(Deviation(
            "data.lm.source", "WikiText-103, the Pile, SQuAD, CNN/DailyMail (Nugget2D §5-6)",
            "offline: Wikipedia articles and the Python docs as LM text; QA and summaries are labelled stand-ins "
            "(cloze questions, lead sentences)"))
    else:
        if lmdata.wikitext_config != "wikitext-103-v1":
            out.append(Deviation("data.lm.wikitext_config", "WikiText-103 with <unk>, excluded from word PPL",
                                 f"{lmdata.wikitext_config}: no <unk> to exclude"))
        if not lmdata.pile_files:
            out.append(Deviation(
                "data.lm.pile_files", "the Pile (Gao et al., 2020; Nugget2D §4-6)",
                f"{HF_NAMES['pile'][0]} by name: the Pile without its subsets under copyright (the original is no "
                "longer distributed on the hub); a local copy of the original in data.lm.pile_files is read as is"))
    cal = cfg("calibrate.threshold")
    out.append(Deviation(
        "calibrate.threshold (corpora, sample_split)", "Lambda from sampled documents, the corpus not named "
        "(Nugget2D §2.5)", f"{cal.sample_docs} segments per corpus of {cal.corpora}, split {cal.sample_split!r} "
        "(config load refuses the split eval_lm scores): text the scorer and the AR model train on"))
    nlm_data, nlm = cfg("data.nugget_lm"), cfg("train.nugget_lm")
    if nlm_data.source != "wikitext103":
        out.append(Deviation("data.nugget_lm.source", "WikiText-103 train / test (Nugget §6.2)",
                             f"{nlm_data.source}: offline Wikipedia articles, split here"))
    elif nlm_data.wikitext_config != "wikitext-103-v1":
        out.append(Deviation("data.nugget_lm.wikitext_config", "WikiText-103 with <unk>, excluded from the PPL (§6.2)",
                             f"{nlm_data.wikitext_config}: no <unk> to exclude"))
    if nlm.segment_tokens != 128:
        out.append(Deviation("train.nugget_lm.segment_tokens", "segments of s = 128 tokens (Nugget §6.2)",
                             f"{nlm.segment_tokens}: sized for this profile"))
    stride = cfg("eval").nugget_lm.stride
    if stride > 1:
        out.append(Deviation(
            "eval.nugget_lm.stride", "each token read with as many preceding tokens as possible in its segment, up "
            "to 128 (Nugget app. B.2)",
            f"windows of {nlm.segment_tokens} tokens every {stride}: past the first window a token reads "
            f"{nlm.segment_tokens - stride} to {nlm.segment_tokens - 1} preceding tokens (stride 1 gives each the "
            f"most, at {stride}x the passes)"))
    if cfg("data.pi").source != "parabank":
        out.append(Deviation("data.pi.source", "ParaBank v1 paraphrases (Nugget app. A.1)",
                             f"{cfg('data.pi').source}: offline Bible translations as paraphrase pairs"))
    if cfg("data.rr").source != "wikitext103":
        out.append(Deviation("data.rr.source", "WikiText-103 passages (Nugget app. A.2)",
                             f"{cfg('data.rr').source}: an offline Wikipedia dump"))
    max_tasks = cfg("eval").max_tasks
    if max_tasks != 1024:
        out.append(Deviation("eval.max_tasks", "1024 PI / RR queries per task (Nugget §6.1)",
                             f"{max_tasks or 'every built'} queries: sized for this profile"))
    adapter = cfg("eval").lm.baseline_adapter
    if adapter != "trained":
        out.append(Deviation(
            "eval.lm.baseline_adapter", "Full and Compressive trained with Nugget2D's configuration (§5.1)",
            f"{adapter}: both decode with " + ("the base LM's weights" if adapter == "none" else
                                               "the autoregressive Nugget2D's theta")
            + ", untrained as baselines (set trained and train.nugget2d_ar.baselines: two more trainings)"))
    return (out + _table1_windows(cfg) + _table1_scored(cfg) + _nugget2d_optimisers(cfg) + _nugget2d_stopping(cfg)
            + _nugget_budgets(cfg) + _re_checked(cfg))


TABLE1_BUDGETS = "Nugget2D table 1: one trained model per system for both budgets"
TABLE1_FULL = "Nugget2D table 1: Full's training context"


def _table1_windows(cfg: Config) -> list[Deviation]:
    """Nugget2D table 1's rows against the windows their models were trained with: one
    ``train_nugget2d_ar`` fit serves every ``eval.lm.contexts`` configuration (the table
    notes of ``eval_lm`` name the rows)."""
    out: list[Deviation] = []
    lm_eval, data, ar = cfg("eval").lm, cfg("data.lm"), cfg("train.nugget2d_ar")
    trained_window, sample = cfg("nugget2d").recent_window, data.distant_tokens + data.recent_tokens
    trained = lm_eval.baseline_adapter == "trained"
    systems = [s for s in ("nugget2d", "compressive") if s in lm_eval.systems
               and (s == "nugget2d" or (trained and s in ar.baselines))]
    other = [c for c in lm_eval.contexts if c.context_tokens != trained_window]
    if systems and other:
        rows = ", ".join(f"{c.total_states}/{c.compressed_tokens}/{c.context_tokens}" for c in other)
        out.append(Deviation(
            TABLE1_BUDGETS, "one training configuration for Nugget2D and Compressive (§5.1: three window settings "
            "'512, 0, and 128', their symbols lost in the text), evaluated at 128/640/64 and 64/320/32",
            f"{' and '.join(systems)} trained once each with omega_r = nugget2d.recent_window = {trained_window} on "
            f"{sample}-token samples (data.lm distant + recent; no omega_d, no nugget cap); the {rows} rows evaluate "
            f"that model at omega_r = {' / '.join(str(c.context_tokens) for c in other)}, a window it was not trained "
            "with (a model per budget is one more train_nugget2d_ar fit each)"))
    windows = [c.total_states for c in lm_eval.contexts if c.total_states < sample]
    if trained and "full" in ar.baselines and "full" in lm_eval.systems and windows:
        out.append(Deviation(
            TABLE1_FULL, "Full, LLaMA-2-7B trained on the Pile (§5.1, its context length not stated), read with "
            "128 / 64 tokens of context in table 1",
            f"trained attending to whole {sample}-token samples (scoring the last {data.recent_tokens}), evaluated "
            f"with a sliding window of {' / '.join(map(str, windows))} tokens"))
    return out


TABLE1_WIKI = "Nugget2D table 1: the WikiText-103 tokens scored"
TABLE1_PILE = "eval.lm.pile_tokens (Nugget2D table 1's Pile test set)"
PAPER_PILE_TOKENS = 100_000  # §5.2: "a held-out subset of the Pile, which is randomly sampled and contains 100k tokens"


def _table1_scored(cfg: Config) -> list[Deviation]:
    """Which tokens table 1's perplexities are over: each build_lm segment scores its last
    ``recent_tokens`` after ``distant_tokens`` of history, so a share of the split's tokens;
    the Pile test set is the first segments holding ``eval.lm.pile_tokens`` scored tokens."""
    out: list[Deviation] = []
    lm_eval, data = cfg("eval").lm, cfg("data.lm")
    size = data.distant_tokens + data.recent_tokens
    n = lm_eval.max_segments
    cap = f"the first {n} segment{'s' if n != 1 else ''}" if n else "every segment"
    if "wiki" in lm_eval.corpora:
        out.append(Deviation(
            TABLE1_WIKI, "perplexity on WikiText-103, its out-of-vocabulary tokens excluded (Nugget2D §5.2; which split "
            "and which of its tokens are scored is not stated: a WikiText-103 perplexity conventionally scores every "
            "token of the test split)",
            f"{cap} of build_lm's {lm_eval.split} segments: each article cut into consecutive windows of "
            f"{data.distant_tokens} + {data.recent_tokens} = {size} tokens, of which only the last "
            f"{data.recent_tokens} are scored (the first {data.distant_tokens} are history, and an article's last "
            f"window of at most {data.distant_tokens} tokens is dropped): about {data.recent_tokens / size:.0%} of the "
            "split's tokens"))
    if "pile" in lm_eval.corpora and lm_eval.pile_tokens != PAPER_PILE_TOKENS:
        scored = (f"the first segments holding {lm_eval.pile_tokens} scored tokens" if lm_eval.pile_tokens else
                  f"{cap} ({data.recent_tokens} scored tokens each)")
        out.append(Deviation(
            TABLE1_PILE, "'a held-out subset of the Pile, which is randomly sampled and contains 100k tokens' (Nugget2D "
            "§5.2)", f"{scored} of build_lm's Pile {lm_eval.split} split ({data.dev_fraction:g} of the documents of the "
            "loaded Pile: data.lm.pile_files, or the hub's copy whole)"))
    return out


NUGGET2D_JOBS = ("nugget2d", "nugget2d_ar", "nugget2d_ft", "nugget2d_ae", "full_ft")
NUGGET2D_OPTIMISER = "Nugget2D optimiser (train.nugget2d, _ar, _ft, _ae, train.full_ft)"
NUGGET2D_STOPPING = "Nugget2D stopping rule (train.nugget2d, _ar, _ft, _ae, train.full_ft: export_model)"
# no TrainJob field sets Adam's eps: torch.optim.Adam / AdamW's default on both backends
# (stages/training/engine.py: DDP's optimiser and DeepSpeed's torch_adam get lr, betas, weight_decay only)
ADAM_EPS_TEXT = "1e-8"


def _optimiser_settings(job: TrainJob) -> str:
    """A job's optimiser in full, as the code builds it (stages/training/engine.py, loop.lr_at)."""
    kind = ("AdamW (decoupled weight decay)" if job.optimizer == "adamw" else
            "Adam (weight decay as an L2 term in the gradient)" if job.weight_decay > 0 else "Adam")
    clip = f"gradient clipping at norm {job.max_grad_norm:g}" if job.max_grad_norm else "no gradient clipping"
    decay = {"cosine": "cosine decay to 0 at", "linear": "linear decay to 0 at", "constant": "constant lr to"}
    return (f"{kind}, lr {job.lr:g}, weight decay {job.weight_decay:g}, betas ({job.betas[0]:g}, {job.betas[1]:g}), "
            f"eps {ADAM_EPS_TEXT} (torch's default: no setting), {clip}, {job.warmup_steps} linear warm-up steps then "
            f"{decay[job.schedule]} step {job.max_steps}")


def _nugget2d_optimisers(cfg: Config) -> list[Deviation]:
    """Nugget2D app. A's optimiser values are lost in our copy of the paper ("an Adam optimizer ...
    with a learning rate of , , , and ."), which says it follows LLaMA-2's setup: every value of
    the Nugget2D jobs' optimiser is a choice of ours, listed as the code applies it."""
    jobs: dict[str, list[str]] = {}
    for name in NUGGET2D_JOBS:
        jobs.setdefault(_optimiser_settings(cfg(f"train.{name}")), []).append(f"train.{name}")
    here = "; ".join(f"{', '.join(names)}: {settings}" for settings, names in jobs.items())
    return [Deviation(
        NUGGET2D_OPTIMISER,
        "'an Adam optimizer (Kingma & Ba, 2015) with a learning rate of [lost], [lost], [lost], and [lost]', "
        "'following the training setup of Touvron et al. (2023b)'; a cosine schedule, 2k warm-up steps, a 150k-step "
        "period (Nugget2D app. A; the values are lost in our text copy). LLaMA-2's own setup (Touvron et al. 2023b "
        "§2.2): AdamW, betas (0.9, 0.95), eps 1e-5, weight decay 0.1, gradient clipping 1.0, cosine to 10% of the "
        "peak lr",
        f"{here}: our choices, not the paper's (its values are lost)")]


def _nugget2d_stopping(cfg: Config) -> list[Deviation]:
    """Nugget2D app. A: "All the models are trained until early stopping because of the
    convergence of the loss on the validation set": early stopping on the dev loss, the best
    evaluation's weights kept (``export_model: best_dev``). A job that trains a fixed number of
    steps, or stops early but keeps its last step's weights, is named with its rule."""
    other = [f"train.{name}: {job.stopping_rule()}" for name in NUGGET2D_JOBS
             if not ((job := cfg(f"train.{name}")).early_stopping_patience and job.export_model == "best_dev")]
    if not other:
        return []
    return [Deviation(NUGGET2D_STOPPING, "every model trained until early stopping on the validation loss (Nugget2D "
                      "app. A), read as: its best dev evaluation's weights kept",
                      "; ".join(other) + ": sized for this profile")]


def _nugget_budgets(cfg: Config) -> list[Deviation]:
    """How long the systems of Nugget tables 2 / 4 train (app. B.1: every model "until
    convergence on the dev set"): read here as early stopping on the dev loss, the best
    evaluation's weights kept, one rule for Nugget, its sweep, TSDAE, RE and the ablations."""
    by_stage = training_budgets(cfg("train.nugget"), cfg("train.sweep"), cfg("train.baselines"))
    rules = {"train.nugget": by_stage["train_nugget"], "train.sweep": by_stage["sweep_nugget"],
             "train.baselines": by_stage["train_baselines"]}
    if len(set(rules.values())) == 1:
        here = f"one rule for all: {rules['train.nugget']}"
    else:
        here = "; ".join(f"{job}: {rule}" for job, rule in rules.items()) + ": unequal budgets, the tables compare " \
            "systems trained for different lengths"
    return [Deviation("training budgets of Nugget tables 2 / 4 (train.nugget, train.sweep, train.baselines)",
                      "each model trained until convergence on the dev set (Nugget app. B.1)", here)]


# Nugget2D §3's checkpoint per experiment, matched on the name's last component (a hub id or a
# local folder named as released: meta-llama/Llama-2-7b-hf, huggyllama/llama-7b, /models/llama-2-7b-chat)
LLAMA_2_7B = re.compile(r"^llama-?2-7b(-hf)?$")
LLAMA_2_7B_CHAT = re.compile(r"^llama-?2-7b-chat(-hf)?$")
LLAMA_7B = re.compile(r"^llama-7b(-hf)?$")


def _checkpoint(name_or_path: str) -> str:
    return PurePosixPath(name_or_path.rstrip("/")).name.lower().replace("_", "-")


def _lm_checkpoints(lm: Any) -> list[Deviation]:
    """Each Nugget2D experiment's base LM against the paper's (§3): LLaMA-2-7B for language
    modelling, LLaMA-2-7B-chat for QA and summarisation, LLaMA-7B for §4's autoencoding."""
    if lm.source != "pretrained":
        return [Deviation("model.lm", "LLaMA-2-7B / LLaMA-2-7B-chat / LLaMA-7B (Nugget2D §3)",
                          f"{lm.source} SmolLM2-135M-Instruct: the LLaMA-family LM available offline and on CPU")]
    chat = lm.chat_name_or_path or lm.name_or_path
    roles = (
        ("model.lm.name_or_path (LM experiments, §5)", lm.name_or_path, "LLaMA-2-7B", LLAMA_2_7B, ""),
        ("model.lm.chat_name_or_path", chat, "LLaMA-2-7B-chat for QA and summarisation (§6)", LLAMA_2_7B_CHAT,
         "" if lm.chat_name_or_path else " (chat_name_or_path unset: the LM experiments' model)"),
        ("train_nugget2d_ae's base LM (autoencoding, §4)", lm.name_or_path, "LLaMA-7B, following ICAE", LLAMA_7B,
         ": train_nugget2d_ae trains on model.lm.name_or_path, the LM experiments' base; no config role holds a "
         "third checkpoint"),
    )
    return [Deviation(setting, f"{paper} (Nugget2D §3)", f"{value}{why}")
            for setting, value, paper, pattern, why in roles if not pattern.match(_checkpoint(value))]


def _optimiser(job: TrainJob) -> str:
    return f"{job.optimizer} lr {job.lr:g}, weight decay {job.weight_decay:g}, {job.schedule} schedule, " \
           f"{job.warmup_steps} warm-up steps"


def _re_checked(cfg: Config) -> list[Deviation]:
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


TABLE4_RL = "Nugget2D table 4's RL"

# paper settings the code does not follow in any profile
ALWAYS: list[Deviation] = [
    Deviation("train_nugget_lm: one model per system (Nugget §6.2)", "a model per h = 1, 2, 4, 8 (table 3's columns), "
              "each Nugget LM from the AE model of its own ratio",
              "one model per system, h drawn per batch from train.nugget_lm.histories and evaluated at each h; every "
              "Nugget LM, the compressive and the transformer start from train_nugget's AE model (its scorer "
              "reused at each ratio): 4x fewer trainings, no AE training per ratio"),
    Deviation("train_nugget2d_ae data (Nugget2D §4)", "LLaMA-7B fine-tuned on the Pile",
              "build_lm's continuation windows, which mix its wiki and pile documents (a Pile-only corpus for "
              "this stage is not built)"),
    Deviation(TABLE4_RL, "RL on CNN/DailyMail, the ROUGE-L variant not stated (Nugget2D §6.3, table 4)",
              "read as ROUGE-Lsum (rouge-score's rougeLsum, stemmed: the summary-level LCS over the sentences, one "
              "per line), what CNN/DailyMail papers report as ROUGE-L and in line with table 4's RL lying close to "
              "its R1; ROUGE-L of the texts taken whole is in eval_summarization's table beside it"),
]


def deviations(cfg: Config) -> list[Deviation]:
    """Every paper setting this run does not follow (config-checked first, then those
    that hold in every profile)."""
    return _checked(cfg) + ALWAYS
