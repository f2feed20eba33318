"""Estimated device cost of the RE study's stages (restorable embeddings on a pretrained
encoder-decoder): the restoration models of train_re, the bi-encoders of
train_re_retrieval, and their evaluations. Texts of ``k`` sentences are counted at an
ASSUMED length per sentence (`stages.costs.published.LENGTHS`), cut to ``train.re.max_tokens``.

Counts that mirror a stage's own code are checked against it by tests/costs/test_mirrors.py.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import TYPE_CHECKING

from stages.costs.estimate import EVAL, TRAIN, Fit, StageCost, Work, not_estimated, training
from stages.costs.published import LENGTHS, SPLITS
from stages.costs.seq2seq import (
    Seq2SeqShape,
    encoder_forward_work,
    encoder_step_work,
    seq2seq_decode_step_bytes,
    seq2seq_step_work,
)
from stages.costs.shapes import re_shape
from stages.costs.work import flops
from stages.restorable.config import RE_CONFIGS

if TYPE_CHECKING:
    from stages.config.schema import PipelineConfig
    from stages.restorable.config import RETrainJob

#: RE table 3's rows beyond one sentence (mirrors stages.restorable.train_re.TABLE3).
TABLE3 = {"configs": ("c", "d"), "poolings": ("mean",), "decoders": ("cross", "gating")}


def re_grid(job: RETrainJob) -> list[tuple[int, str, str, str]]:
    """(sentences, config, pooling, decoder) of every train_re model (mirrors `re_systems`)."""
    out = []
    for k in job.sentence_counts:
        cut = k > 1 and job.beyond_one_sentence == "table3"
        configs = [c for c in job.configs if not cut or c in TABLE3["configs"]]
        poolings = [p for p in job.poolings if not cut or p in TABLE3["poolings"]]
        decoders = [d for d in job.decoders if not cut or d in TABLE3["decoders"]]
        out += [(k, c, p, d) for c in configs for p in poolings for d in decoders]
    return out


def retrieval_count(cfg: PipelineConfig) -> int:
    """train_re_retrieval's bi-encoders (mirrors `retrieval_systems`)."""
    job = cfg.train.re_retrieval
    layers = {cfg.train.re.extra_layers if RE_CONFIGS[c][1] else 0
              for _, c, _, _ in re_grid(cfg.train.re) if c in job.configs}
    return (len(layers) if job.pretrained_baselines else 0) + len(job.configs) * len(job.sentence_counts)


def text_tokens(cfg: PipelineConfig, sentences: int) -> int:
    per = sentences * LENGTHS["sentence"].value
    return min(per, cfg.train.re.max_tokens) if cfg.train.re.max_tokens else per


def _shape(cfg: PipelineConfig) -> tuple[Seq2SeqShape | None, str]:
    found = re_shape(cfg)
    return (found.shape if isinstance(found.shape, Seq2SeqShape) else None), found.basis


def _notes(cfg: PipelineConfig, basis: str) -> tuple[str, ...]:
    cap = f", cut to train.re.max_tokens = {cfg.train.re.max_tokens}" if cfg.train.re.max_tokens else ""
    return (f"model: {basis}", LENGTHS["sentence"].note("tokens per sentence") + cap)


def train_re(cfg: PipelineConfig) -> StageCost:
    """Each model: its encoder (frozen for b / d, plus extra layers for c / d) pooled into
    one vector that the decoder restores the text from."""
    shape, basis = _shape(cfg)
    if shape is None:
        return not_estimated("train_re", basis, TRAIN)
    job, fits = cfg.train.re, []
    for k, config, pooling, decoder in re_grid(job):
        freeze, extra = RE_CONFIGS[config]
        grown = replace(shape, encoder_layers=shape.encoder_layers + (job.extra_layers if extra else 0))
        T = text_tokens(cfg, k)
        work = seq2seq_step_work(grown, batch=job.examples_per_step(), source=T, target=T, nuggets=1,
                                 frozen_layers=shape.encoder_layers if freeze else 0)
        fits.append(Fit(f"n{k}_{config}_{pooling}_{decoder}", flops(work), job.max_steps))
    return training("train_re", job, "train.re", fits, _notes(cfg, basis))


def train_re_retrieval(cfg: PipelineConfig) -> StageCost:
    """Each bi-encoder: queries and their positive and hard-negative passages per step."""
    shape, basis = _shape(cfg)
    if shape is None:
        return not_estimated("train_re_retrieval", basis, TRAIN)
    job = cfg.train.re_retrieval
    q = job.examples_per_step()
    step = flops(encoder_step_work(shape, sequences=q, length=job.max_query_tokens)) + flops(
        encoder_step_work(shape, sequences=q * (1 + job.hard_negatives), length=job.max_passage_tokens))
    n = retrieval_count(cfg)
    fits = [Fit(f"{n} bi-encoders", step * n, job.max_steps)]
    notes = (f"model: {basis} (encoder; the extra layers of c / d not counted)",
             f"queries / passages at their caps {job.max_query_tokens} / {job.max_passage_tokens} tokens: "
             "an upper bound")
    return training("train_re_retrieval", job, "train.re_retrieval", fits, notes)


def eval_re_restoration(cfg: PipelineConfig) -> StageCost:
    """Every model restores ``eval.re.max_examples`` dev texts by beam search from its vector."""
    shape, basis = _shape(cfg)
    e = cfg.eval.re
    if shape is None:
        return not_estimated("eval_re_restoration", basis, EVAL)
    if not e.max_examples:
        return not_estimated("eval_re_restoration", "eval.re.max_examples=0: every dev text of build_re_data, "
                             "a count known once built", EVAL)
    dtype, n, work = 2 if cfg.eval.dtype == "bf16" else 4, e.max_examples, []
    for k in sorted({g[0] for g in re_grid(cfg.train.re)}):
        models = sum(1 for g in re_grid(cfg.train.re) if g[0] == k)
        new = text_tokens(cfg, k) + e.extra_tokens
        rows = min(e.batch_size, n) * e.beam_size
        read = math.ceil(n / e.batch_size) * new * seq2seq_decode_step_bytes(
            shape, read=1, generated=new / 2, dtype_bytes=dtype, sequences=rows)
        encode = flops(encoder_forward_work(shape, sequences=n, length=text_tokens(cfg, k)))
        work.append(Work(f"{models} models of {k} sentence(s): {n} texts, beam {e.beam_size}, {new} steps",
                         models * encode, models * read))
    return StageCost("eval_re_restoration", EVAL, tuple(work), (*_notes(cfg, basis), "decoding to the cap"))


def eval_re_retrieval(cfg: PipelineConfig) -> StageCost:
    """Every bi-encoder encodes the whole passage collection and the test queries."""
    shape, basis = _shape(cfg)
    job, e = cfg.train.re_retrieval, cfg.eval.re
    if shape is None:
        return not_estimated("eval_re_retrieval", basis, EVAL)
    if cfg.data.re_retrieval.source != "dpr_nq":
        return not_estimated("eval_re_retrieval", "the passage collection is build_re_retrieval's stand-in, "
                             "a count known once built", EVAL)
    passages = SPLITS["dpr_passages"]
    queries = e.max_queries or SPLITS["nq_test"].value
    n = retrieval_count(cfg)
    total = flops(encoder_forward_work(shape, sequences=passages.value, length=job.max_passage_tokens)) + flops(
        encoder_forward_work(shape, sequences=queries, length=job.max_query_tokens))
    work = Work(f"{n} bi-encoders x ({passages.value:,} passages + {queries:,} queries)", n * total)
    notes = (f"model: {basis} (encoder)", passages.note("passages"),
             f"passages at train.re_retrieval.max_passage_tokens = {job.max_passage_tokens}: an upper bound")
    return StageCost("eval_re_retrieval", EVAL, (work,), notes)
