"""Estimated device cost of the Nugget2D stages (LoRA on a LLaMA-family LM), from the
config: each fit's steps x examples x the LoRA step of `stages.costs.decoder`, each
evaluation's examples x systems x prefill FLOPs and decode bytes.

Counts that mirror a stage's own code (it may not be imported here: `stages.costs` is a
shared layer) are checked against it by tests/costs/test_mirrors.py.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from stages.costs.decoder import DecoderShape, decode_step_bytes, lm_forward_work, lora_step_work
from stages.costs.estimate import EVAL, TRAIN, Fit, StageCost, Work, not_estimated, training
from stages.costs.published import LENGTHS
from stages.costs.shapes import lm_shape
from stages.costs.work import FORWARD, Matmul, causal_pairs, flops

if TYPE_CHECKING:
    from stages.config.schema import PipelineConfig
    from stages.nugget2d.config import LMTrainJob

AUTOENCODING = "autoencoding"


def nuggets(ratio: float, tokens: int) -> int:
    return max(1, math.ceil(ratio * tokens))


def dtype_bytes(cfg: PipelineConfig) -> int:
    return 2 if cfg.eval.dtype == "bf16" else 4


def task_lengths(cfg: PipelineConfig, task: str, cap: int) -> tuple[int, int, list[str]]:
    """(document, answer) tokens of a fine-tuning / evaluation task and the notes on them:
    ``cap`` where set, else the ASSUMED mean lengths of the published data."""
    doc_key, answer_key = ("squad_passage", "squad_answer") if task == "qa" else ("cnn_article", "cnn_summary")
    doc = cap or LENGTHS[doc_key].value
    answer = LENGTHS[answer_key].value
    notes = [] if cap else [LENGTHS[doc_key].note("document tokens")]
    return doc, answer, [*notes, LENGTHS[answer_key].note("answer tokens")]


def _step(cfg: PipelineConfig, shape: DecoderShape, job: LMTrainJob, *, doc: int, prompt: int, answer: int,
          ratio: float | None) -> float:
    """FLOPs of one optimiser step: the LoRA step and, for Nugget2D, the frozen LM's
    forward up to the scorer's layer over the document (its features)."""
    batch = job.examples_per_step()
    k = None if ratio is None else nuggets(ratio, doc)
    work = lora_step_work(shape, batch=batch, doc=doc, prompt=prompt, answer=answer, rank=cfg.nugget2d.lora_rank,
                          targets=cfg.nugget2d.lora_target_modules, nuggets=k,
                          recompute="all" if job.activation_checkpointing else "none")
    if k is not None:
        work.append(Matmul("scorer features", cfg.nugget2d.scorer_layer * shape.layer_matmul_params(),
                           batch * doc, FORWARD))
    return flops(work)


def _compressor_fit(cfg: PipelineConfig, shape: DecoderShape, job: LMTrainJob, name: str, objective: str,
                    ratio: float | None, notes: list[str]) -> Fit:
    lm = cfg.data.lm
    if objective == AUTOENCODING:
        doc, prompt, answer = lm.doc_tokens, cfg.nugget2d.soft_prompt_tokens, lm.doc_tokens
    elif objective == "continuation":
        doc, prompt, answer = lm.doc_tokens, lm.prompt_tokens, lm.answer_tokens
    else:  # finetune
        task = getattr(job, "finetune_task", "qa")
        doc, answer, more = task_lengths(cfg, task, getattr(job, "max_doc_tokens", 0))
        prompt = lm.prompt_tokens
        notes += [n for n in more if n not in notes]
    return Fit(name, _step(cfg, shape, job, doc=doc, prompt=prompt, answer=answer, ratio=ratio), job.max_steps)


def _shape_or_none(cfg: PipelineConfig, name: str, chat: bool) -> tuple[DecoderShape | None, StageCost | None, str]:
    found = lm_shape(cfg.model.lm, chat=chat)
    if not isinstance(found.shape, DecoderShape):
        return None, not_estimated(name, found.basis, TRAIN), found.basis
    return found.shape, None, found.basis


def train_nugget2d(cfg: PipelineConfig) -> StageCost:
    """The compressor, a model per extra ratio and the autoencoding scorer variant, in turn."""
    job, ratio = cfg.train.nugget2d, cfg.nugget2d.ratio
    shape, missing, basis = _shape_or_none(cfg, "train_nugget2d", chat=True)
    if missing or shape is None:
        return missing or not_estimated("train_nugget2d", basis)
    specs = [("main", job.objective, ratio), *((f"r{r:g}", job.objective, r) for r in job.extra_ratios)]
    if job.ar_scorer == AUTOENCODING and job.objective != AUTOENCODING:
        specs.append((AUTOENCODING, AUTOENCODING, ratio))
    notes = [f"model: {basis}", f"lengths: data.lm doc / prompt / answer {cfg.data.lm.doc_tokens} / "
             f"{cfg.data.lm.prompt_tokens} / {cfg.data.lm.answer_tokens} tokens"]
    fits = [_compressor_fit(cfg, shape, job, f"{n} ({o}, r={r:g})", o, r, notes) for n, o, r in specs]
    return training("train_nugget2d", job, "train.nugget2d", fits, notes)


def _finetune(cfg: PipelineConfig, name: str, job_key: str, ratio: float | None) -> StageCost:
    job = getattr(cfg.train, job_key.split(".")[1])
    shape, missing, basis = _shape_or_none(cfg, name, chat=True)
    if missing or shape is None:
        return missing or not_estimated(name, basis)
    notes = [f"model: {basis}"]
    system = "full (LoRA)" if ratio is None else f"nugget2d r={ratio:g}"
    fit = _compressor_fit(cfg, shape, job, f"{system}, {job.finetune_task}", "finetune", ratio, notes)
    return training(name, job, job_key, [fit], notes)


def train_full_ft(cfg: PipelineConfig) -> StageCost:
    return _finetune(cfg, "train_full_ft", "train.full_ft", None)


def train_nugget2d_ft(cfg: PipelineConfig) -> StageCost:
    return _finetune(cfg, "train_nugget2d_ft", "train.nugget2d_ft", cfg.nugget2d.ratio)


def train_nugget2d_ar(cfg: PipelineConfig) -> StageCost:
    """The autoregressive model and its LM baselines on LM segments (distant | recent)."""
    job, r, lm = cfg.train.nugget2d_ar, cfg.nugget2d.ratio, cfg.data.lm
    shape, missing, basis = _shape_or_none(cfg, "train_nugget2d_ar", chat=False)
    if missing or shape is None:
        return missing or not_estimated("train_nugget2d_ar", basis)
    kw = dict(doc=lm.distant_tokens, prompt=0, answer=lm.recent_tokens)
    fits = [Fit(f"nugget2d (r={r:g})", _step(cfg, shape, job, ratio=r, **kw), job.max_steps)]
    for system in job.baselines:  # full: causal over the segment; compressive: as many pooled states
        fits.append(Fit(system, _step(cfg, shape, job, ratio=None if system == "full" else r, **kw), job.max_steps))
    notes = [f"model: {basis}", f"segments: {lm.distant_tokens} distant (compressed) + {lm.recent_tokens} recent "
             "(scored) tokens; counted as a compressor step on the distant part (one pass per token)"]
    return training("train_nugget2d_ar", job, "train.nugget2d_ar", fits, notes)


def train_nugget2d_ae(cfg: PipelineConfig) -> StageCost:
    """An autoencoder per ratio and, with ``icae``, ICAE per ratio, in turn."""
    job = cfg.train.nugget2d_ae
    shape, missing, basis = _shape_or_none(cfg, "train_nugget2d_ae", chat=False)
    if missing or shape is None:
        return missing or not_estimated("train_nugget2d_ae", basis)
    longest = min(job.max_doc_tokens, cfg.data.lm.doc_tokens)
    doc = (job.min_doc_tokens + longest) // 2
    soft = cfg.nugget2d.soft_prompt_tokens
    fits = [Fit(f"nugget2d r={r:g}", _step(cfg, shape, job, doc=doc, prompt=soft, answer=doc, ratio=r), job.max_steps)
            for r in job.ratios]
    if job.icae:  # ICAE: the document and its ceil(r x max_doc_tokens) slots encoded, the slots read
        for r in job.ratios:
            slots = nuggets(r, job.max_doc_tokens)
            step = flops(lora_step_work(shape, batch=job.examples_per_step(), doc=doc + slots, prompt=soft,
                                        answer=doc, rank=cfg.nugget2d.lora_rank,
                                        targets=cfg.nugget2d.lora_target_modules, nuggets=slots))
            fits.append(Fit(f"icae r={r:g}", step, job.max_steps))
    notes = [f"model: {basis}", f"documents cut uniformly to [{job.min_doc_tokens}, {longest}] tokens: mean {doc}"]
    return training("train_nugget2d_ae", job, "train.nugget2d_ae", fits, notes)


def forward_flops(shape: DecoderShape, sequences: int, tokens: int, logits: int = 0, layers: int | None = None) -> float:
    return sequences * flops(lm_forward_work(shape, tokens=tokens, pairs=causal_pairs(tokens), logits=logits,
                                             layers=layers))


def calibrate_threshold(cfg: PipelineConfig) -> StageCost:
    """The scorer (the frozen LM up to its layer) over sampled and held-out segments."""
    t, lm = cfg.calibrate.threshold, cfg.data.lm
    found = lm_shape(cfg.model.lm)
    if not isinstance(found.shape, DecoderShape):
        return not_estimated("calibrate_threshold", found.basis, EVAL)
    segments = (t.sample_docs + t.heldout_docs) * len(t.corpora)
    tokens = lm.distant_tokens + lm.recent_tokens
    work = Work(f"{segments} segments x {tokens} tokens, {cfg.nugget2d.scorer_layer} layers forward",
                forward_flops(found.shape, segments, tokens, layers=cfg.nugget2d.scorer_layer))
    return StageCost("calibrate_threshold", EVAL, (work,), (f"model: {found.basis}",))


def eval_lm(cfg: PipelineConfig) -> StageCost:
    """Every system reads every segment token by token (batch 1): one decode step per token."""
    e, lm = cfg.eval.lm, cfg.data.lm
    found = lm_shape(cfg.model.lm)
    if not isinstance(found.shape, DecoderShape):
        return not_estimated("eval_lm", found.basis, EVAL)
    work, missing = [], []
    steps = lm.distant_tokens + lm.recent_tokens
    for corpus in e.corpora:
        if corpus == "pile" and e.pile_tokens:
            n = math.ceil(e.pile_tokens / lm.recent_tokens)
            n = min(n, e.max_segments) if e.max_segments else n
        elif e.max_segments:
            n = e.max_segments
        else:
            missing.append(f"{corpus}: every segment of build_lm's {e.split} split (eval.lm.max_segments=0), "
                           "a count known once built")
            continue
        for c in e.contexts:
            read = decode_step_bytes(found.shape, c.total_states, dtype_bytes(cfg))
            work.append(Work(f"{corpus}, {c.total_states} states: {n} segments x {len(e.systems)} systems x "
                             f"{steps} steps", nbytes=n * len(e.systems) * steps * read))
    return StageCost("eval_lm", EVAL, tuple(work), (f"model: {found.basis}",), missing="; ".join(missing))
