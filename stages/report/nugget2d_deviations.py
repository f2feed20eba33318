"""The Nugget2D study's settings this run does not follow (`stages.report.deviations` lists
every study's): the base LMs of §3, table 1's windows and scored tokens, the optimiser of
app. A and its stopping rule, each checked against the run's configuration."""

from __future__ import annotations

import re
from pathlib import PurePosixPath
from typing import Any

from stages.config.job import TrainJob
from stages.report.deviation import Config, Deviation


def nugget2d_deviations(cfg: Config) -> list[Deviation]:
    """Table 1's windows and scored tokens, the optimiser and the stopping rule of the Nugget2D jobs."""
    return _table1_windows(cfg) + _table1_scored(cfg) + _nugget2d_optimisers(cfg) + _nugget2d_stopping(cfg)


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


# Nugget2D §3's checkpoint per experiment, matched on the name's last component (a hub id or a
# local folder named as released: meta-llama/Llama-2-7b-hf, huggyllama/llama-7b, /models/llama-2-7b-chat)
LLAMA_2_7B = re.compile(r"^llama-?2-7b(-hf)?$")
LLAMA_2_7B_CHAT = re.compile(r"^llama-?2-7b-chat(-hf)?$")
LLAMA_7B = re.compile(r"^llama-7b(-hf)?$")


def _checkpoint(name_or_path: str) -> str:
    return PurePosixPath(name_or_path.rstrip("/")).name.lower().replace("_", "-")


def lm_checkpoints(lm: Any) -> list[Deviation]:
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
