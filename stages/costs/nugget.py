"""Estimated device cost of the Nugget stages (BART-style encoder-decoders, every weight
trained but the frozen bottom layers): each fit's steps x examples x the step of
`stages.costs.seq2seq`, each evaluation's documents x systems x encoder forwards and
decode steps. Documents are counted at ``data.mt.max_doc_tokens`` (they are at most that
long): the training figures are upper bounds.

Counts that mirror a stage's own code are checked against it by tests/costs/test_mirrors.py.
"""

from __future__ import annotations

import math
from statistics import mean
from typing import TYPE_CHECKING

from stages.costs.estimate import EVAL, TRAIN, Fit, StageCost, Work, not_estimated, training
from stages.costs.published import SPLITS
from stages.costs.seq2seq import (
    Seq2SeqShape,
    decoder_forward_work,
    encoder_forward_work,
    seq2seq_decode_step_bytes,
    seq2seq_step_work,
)
from stages.costs.shapes import seq2seq_shape
from stages.costs.work import flops

if TYPE_CHECKING:
    from stages.config.job import TrainJob
    from stages.config.schema import PipelineConfig

#: train_baselines' single-vector systems (mirror `SystemSpec.bottleneck` of
#: stages.nugget.train_baselines.SYSTEMS) and those at eval.baselines.sentence_ratio.
BOTTLENECK = ("tsdae_ae", "tsdae_mt", "re_cross", "re_gating")
SENTENCE_RATIO = ("sentence", "nugget_r0033")


def k(ratio: float, tokens: int) -> int:
    return max(1, math.ceil(ratio * tokens))


def _shape(cfg: PipelineConfig) -> Seq2SeqShape | str:
    found = seq2seq_shape(cfg.model.seq2seq)
    return found.shape if isinstance(found.shape, Seq2SeqShape) else found.basis


def _nugget_step(cfg: PipelineConfig, shape: Seq2SeqShape, job: TrainJob, ratio: float, layer: int,
                 source: int, target: int) -> float:
    return flops(seq2seq_step_work(shape, batch=job.examples_per_step(), source=source, target=target,
                                   nuggets=k(ratio, source), frozen_layers=layer,
                                   scorer_hidden=cfg.nugget.scorer_hidden))


def _bottleneck_step(shape: Seq2SeqShape, job: TrainJob, source: int, target: int) -> float:
    return flops(seq2seq_step_work(shape, batch=job.examples_per_step(), source=source, target=target, nuggets=1))


def _trials(cfg: PipelineConfig) -> list[tuple[float, int, str]]:
    g = cfg.train.sweep
    return [(r, layer, o) for o in g.objectives for r in g.ratios for layer in g.scorer_layers]


def _doc_note(cfg: PipelineConfig) -> list[str]:
    basis = seq2seq_shape(cfg.model.seq2seq).basis
    return [f"model: {basis}", f"source and target at data.mt.max_doc_tokens = {cfg.data.mt.max_doc_tokens}: "
            "documents are at most that long, an upper bound"]


def train_nugget(cfg: PipelineConfig) -> StageCost:
    shape, job, L = _shape(cfg), cfg.train.nugget, cfg.data.mt.max_doc_tokens
    if isinstance(shape, str):
        return not_estimated("train_nugget", shape, TRAIN)
    fit = Fit(f"nugget {job.objective} r={cfg.nugget.ratio:g} l={cfg.nugget.scorer_layer}",
              _nugget_step(cfg, shape, job, cfg.nugget.ratio, cfg.nugget.scorer_layer, L, L), job.max_steps)
    return training("train_nugget", job, "train.nugget", [fit], _doc_note(cfg))


def sweep_nugget(cfg: PipelineConfig) -> StageCost:
    shape, job, L = _shape(cfg), cfg.train.nugget, cfg.data.mt.max_doc_tokens
    if isinstance(shape, str):
        return not_estimated("sweep_nugget", shape, TRAIN)
    steps = cfg.train.sweep.max_steps or job.max_steps
    fits = [Fit(f"trial {o} r={r:g} l={layer}", _nugget_step(cfg, shape, job, r, layer, L, L), steps)
            for r, layer, o in _trials(cfg)]
    concurrent = cfg.train.sweep.max_concurrent_trials
    notes = [*_doc_note(cfg), f"{len(fits)} trials, {concurrent} at once (train.sweep.max_concurrent_trials)"]
    return training("sweep_nugget", job, "train.nugget", fits, notes, concurrent=len(fits))


def train_baselines(cfg: PipelineConfig) -> StageCost:
    shape, job, L = _shape(cfg), cfg.train.baselines, cfg.data.mt.max_doc_tokens
    if isinstance(shape, str):
        return not_estimated("train_baselines", shape, TRAIN)
    b, fits = cfg.eval.baselines, []
    for system in b.systems:
        if system in BOTTLENECK:
            fits.append(Fit(f"{system} (one vector)", _bottleneck_step(shape, job, L, L), job.max_steps))
        else:
            r = b.sentence_ratio if system in SENTENCE_RATIO else cfg.nugget.ratio
            fits.append(Fit(f"{system} (r={r:g})", _nugget_step(cfg, shape, job, r, cfg.nugget.scorer_layer, L, L),
                            job.max_steps))
    notes = [*_doc_note(cfg), "TSDAE's deleted tokens not subtracted"]
    return training("train_baselines", job, "train.baselines", fits, notes)


def train_nugget_lm(cfg: PipelineConfig) -> StageCost:
    """Each system: the encoder over h history segments, the decoder over one segment."""
    shape, job = _shape(cfg), cfg.train.nugget_lm
    if isinstance(shape, str):
        return not_estimated("train_nugget_lm", shape, TRAIN)
    s, h = job.segment_tokens, mean(job.histories)
    history = round(h * s)
    fits = [Fit(f"nugget r={r:g}", _nugget_step(cfg, shape, job, r, cfg.nugget.scorer_layer, history, s),
                job.max_steps) for r in job.ratios]
    batch = job.examples_per_step()
    reads = {"tsdae": math.ceil(h), "compressive": math.ceil(history / job.compressive_chunk)}
    for system in job.baselines:
        source = 0 if system == "transformer" else history
        work = seq2seq_step_work(shape, batch=batch, source=source, target=s) if system == "transformer" else \
            seq2seq_step_work(shape, batch=batch, source=source, target=s, nuggets=reads[system])
        fits.append(Fit(system, flops(work), job.max_steps))
    notes = [f"model: {seq2seq_shape(cfg.model.seq2seq).basis}",
             f"segments of {s} tokens, h = {h:g} history segments (the mean of train.nugget_lm.histories) "
             "encoded as one sequence: an upper bound on the encoder's attention"]
    return training("train_nugget_lm", job, "train.nugget_lm", fits, notes)


def _eval_docs(cfg: PipelineConfig) -> tuple[int | None, list[str]]:
    if cfg.eval.max_examples:
        return cfg.eval.max_examples, []
    mt = cfg.data.mt
    if cfg.eval.nugget_split == "dev" and mt.source == "wmt19" and mt.dev_split == "validation":
        return SPLITS["wmt19_validation"].value, [SPLITS["wmt19_validation"].note("documents")]
    return None, []


def eval_reconstruction(cfg: PipelineConfig) -> StageCost:
    """Beam search from the nuggets (or the one vector) of every learned-selector Nugget
    model and single-vector baseline, up to the longest document + extra tokens."""
    shape, e, L = _shape(cfg), cfg.eval, cfg.data.mt.max_doc_tokens
    if isinstance(shape, str):
        return not_estimated("eval_reconstruction", shape, EVAL)
    n, notes = _eval_docs(cfg)
    if n is None:
        return not_estimated("eval_reconstruction", f"eval.max_examples=0: every document of build_mt_docs' "
                             f"{e.nugget_split} split, a count known once built", EVAL)
    reads = [("train_nugget", k(cfg.nugget.ratio, L))]
    reads += [(f"trial {o} r={r:g} l={layer}", k(r, L)) for r, layer, o in _trials(cfg)]
    reads += [(s, 1) for s in e.baselines.systems if s in BOTTLENECK]
    new, rows, dtype = L + e.reconstruction_extra_tokens, min(e.batch_size, n) * e.beam_size, 2 if e.dtype == "bf16" else 4
    batches = math.ceil(n / e.batch_size)
    encode = flops(encoder_forward_work(shape, sequences=n, length=L))
    work = tuple(Work(f"{name}: {n} documents, beam {e.beam_size}, {new} steps", encode,
                      batches * new * seq2seq_decode_step_bytes(shape, read=read, generated=new / 2,
                                                                dtype_bytes=dtype, sequences=rows))
                 for name, read in reads)
    notes += _doc_note(cfg)[:1] + ["decoding to the cap: an upper bound"]
    return StageCost("eval_reconstruction", EVAL, work, tuple(notes))


def eval_similarity(cfg: PipelineConfig) -> StageCost:
    """Every system encodes each task's query and candidates (PI and RR)."""
    shape, e = _shape(cfg), cfg.eval
    if isinstance(shape, str):
        return not_estimated("eval_similarity", shape, EVAL)
    if not e.max_tasks:
        return not_estimated("eval_similarity", "eval.max_tasks=0: every task build_pi / build_rr made, a count "
                             "known once built", EVAL)
    systems = 1 + len(_trials(cfg)) + len(e.baselines.systems) + 1  # + ColBART (all encoder states)
    texts = e.max_tasks * (2 + cfg.data.pi.negatives) + e.max_tasks * (2 + cfg.data.rr.negatives)
    L = cfg.data.pi.max_doc_tokens
    work = Work(f"{systems} systems x {texts} texts of {L} tokens", systems * flops(
        encoder_forward_work(shape, sequences=texts, length=L)))
    notes = (f"model: {seq2seq_shape(cfg.model.seq2seq).basis}",
             f"every text at data.pi.max_doc_tokens = {L} (RR's sections are assumed as long: RR has no cap)")
    return StageCost("eval_similarity", EVAL, (work,), notes)


def eval_nugget_lm(cfg: PipelineConfig) -> StageCost:
    """Every window: each memory system at each h (encoder over h segments, decoder over
    one), the Transformer once (no memory)."""
    shape, e, job = _shape(cfg), cfg.eval.nugget_lm, cfg.train.nugget_lm
    if isinstance(shape, str):
        return not_estimated("eval_nugget_lm", shape, EVAL)
    if not (e.max_docs and e.max_doc_tokens):
        return not_estimated("eval_nugget_lm", "eval.nugget_lm.max_docs / max_doc_tokens = 0: every token of "
                             f"build_nugget_lm's {e.split} articles, a count known once built", EVAL)
    s = job.segment_tokens
    windows = math.ceil(e.max_docs * e.max_doc_tokens / e.stride)
    memory = [(f"nugget r={r:g}", r) for r in job.ratios] + [(b, 0.0) for b in job.baselines if b != "transformer"]
    work = []
    for name, r in memory:
        total = 0.0
        for h in e.histories:
            read = k(r, h * s) if r else (h if name == "tsdae" else math.ceil(h * s / job.compressive_chunk))
            total += flops(encoder_forward_work(shape, sequences=windows, length=h * s))
            total += flops(decoder_forward_work(shape, sequences=windows, target=s, read=read))
        work.append(Work(f"{name}: {windows} windows x h in {e.histories}", total))
    if "transformer" in job.baselines:
        work.append(Work(f"transformer: {windows} windows", flops(
            decoder_forward_work(shape, sequences=windows, target=s, read=0))))
    notes = (f"model: {seq2seq_shape(cfg.model.seq2seq).basis}",
             f"{e.max_docs} articles x {e.max_doc_tokens} tokens, a window every {e.stride} tokens")
    return StageCost("eval_nugget_lm", EVAL, tuple(work), notes)
