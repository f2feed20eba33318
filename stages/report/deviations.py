"""What stays different from the papers' setups in this run, and why (the report's list).

Each entry is checked against the run's configuration, so the list names exactly the
settings of the profile in use; entries of the last group hold in every profile (what the
code does not reproduce yet). The report shows them under "Differences from the papers".
"""

from __future__ import annotations

from stages.corpora.paper_sources import HF_NAMES
from stages.report.budgets import training_budgets
from stages.report.deviation import Config, Deviation
from stages.report.nugget2d_deviations import lm_checkpoints, nugget2d_deviations
from stages.report.re_deviations import re_deviations
from stages.report.tables import PAPER_SCORER_LAYER

__all__ = ["ALWAYS", "Deviation", "deviations"]


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
    out += lm_checkpoints(lm)
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
    return out + nugget2d_deviations(cfg) + _nugget_budgets(cfg) + re_deviations(cfg)


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
