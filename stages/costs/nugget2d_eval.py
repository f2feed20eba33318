"""Estimated device cost of the Nugget2D generation evaluations (eval_qa,
eval_summarization, eval_nugget2d_ae, eval_efficiency): per system, a forward over what it reads before
decoding (compute-bound) and one decode step per generated token at the stage's batch
(memory-bound: the weights, plus each sequence's KV). Generation runs to its cap: EOS
ends many answers sooner, so the decode part is an upper bound.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from stages.costs.decoder import DecoderShape, decode_step_bytes
from stages.costs.estimate import EVAL, StageCost, Work, not_estimated
from stages.costs.nugget2d import dtype_bytes, forward_flops, nuggets, task_lengths
from stages.costs.published import SPLITS
from stages.costs.shapes import lm_shape

if TYPE_CHECKING:
    from stages.config.schema import PipelineConfig

PRESSES = ("streaming_llm", "snapkv", "key_norm")  # mirrors stages.nugget2d.config.PRESS_SYSTEMS


@dataclass(frozen=True)
class Generation:
    """One system's decoding of one example: ``prefill`` tokens forwarded first, ``kv``
    states attended when the first token is generated, up to ``new`` tokens generated."""

    name: str
    prefill: int
    kv: int
    new: int


def generation_work(shape: DecoderShape, n: int, batch: int, dtype: int, g: Generation) -> Work:
    batches, rows = math.ceil(n / batch), min(batch, n)
    step = decode_step_bytes(shape, g.kv + g.new / 2, dtype, batch=rows)
    return Work(f"{g.name}: {n} x (prefill {g.prefill}, {g.new} new tokens on {g.kv}+ states), batch {rows}",
                forward_flops(shape, n, g.prefill, logits=1), batches * g.new * step)


def _examples(cfg: PipelineConfig, cap: int, published: str) -> tuple[int | None, list[str]]:
    if cap:
        return cap, []
    if cfg.data.lm.source == "paper":
        return SPLITS[published].value, [SPLITS[published].note("examples")]
    return None, []


def _stage(cfg: PipelineConfig, name: str, n: int, batch: int, systems: list[Generation], notes: list[str]
           ) -> StageCost:
    found = lm_shape(cfg.model.lm, chat=name != "eval_nugget2d_ae")
    if not isinstance(found.shape, DecoderShape):
        return not_estimated(name, found.basis, EVAL)
    shape = found.shape
    work = tuple(generation_work(shape, n, batch, dtype_bytes(cfg), g) for g in systems)
    return StageCost(name, EVAL, work, (f"model: {found.basis}", *notes, "generation to its cap: an upper bound"))


def eval_qa(cfg: PipelineConfig) -> StageCost:
    q, prompt = cfg.eval.qa, cfg.data.lm.prompt_tokens
    n, notes = _examples(cfg, q.max_examples, "squad_validation")
    if n is None:
        return not_estimated("eval_qa", "eval.qa.max_examples=0: every question of build_lm's split, a count "
                             "known once built", EVAL)
    if not q.max_doc_tokens and cfg.data.lm.source != "paper":
        return not_estimated("eval_qa", "eval.qa.max_doc_tokens=0: documents uncut, lengths known once built", EVAL)
    doc, _, more = task_lengths(cfg, "qa", q.max_doc_tokens)
    new = q.max_new_tokens
    systems = []
    if "full" in q.systems:
        systems.append(Generation("full", doc + prompt, doc + prompt, new))
    if "nodoc" in q.systems:
        systems.append(Generation("nodoc", prompt, prompt, new))
    if "lmsumm" in q.systems:
        summary = min(q.lmsumm_max_new_tokens, math.ceil(q.lmsumm_ratio * doc))
        systems += [Generation("lmsumm: summary", doc + prompt, doc + prompt, q.lmsumm_max_new_tokens),
                    Generation("lmsumm: answer", summary + prompt, summary + prompt, new)]
    for r in q.nugget_ratios:
        k = nuggets(r, doc) + prompt
        systems += [Generation(f"{s} r={r:g}", doc + prompt, k, new)
                    for s in q.systems if s == "nugget2d" or s in PRESSES]
    notes += [f"prompt (question and template) = data.lm.prompt_tokens = {prompt}", *(n for n in more if n.startswith("document"))]
    return _stage(cfg, "eval_qa", n, q.batch_size, systems, notes)


def eval_summarization(cfg: PipelineConfig) -> StageCost:
    s, prompt = cfg.eval.summarization, cfg.data.lm.prompt_tokens
    n, notes = _examples(cfg, s.max_examples, "cnn_dailymail_test")
    if n is None:
        return not_estimated("eval_summarization", "eval.summarization.max_examples=0: every article of "
                             "build_lm's split, a count known once built", EVAL)
    if not s.max_doc_tokens and cfg.data.lm.source != "paper":
        return not_estimated("eval_summarization", "eval.summarization.max_doc_tokens=0: articles uncut, "
                             "lengths known once built", EVAL)
    doc, _, more = task_lengths(cfg, "summarization", s.max_doc_tokens)
    k = nuggets(s.nugget_ratio, doc) + prompt
    systems = [Generation(name, doc + prompt, doc + prompt if name.startswith("full") else k, s.max_new_tokens)
               for name in s.systems]
    return _stage(cfg, "eval_summarization", n, s.batch_size, systems,
                  [*notes, f"prompt = data.lm.prompt_tokens = {prompt}", *(n for n in more if n.startswith("document"))])


def eval_nugget2d_ae(cfg: PipelineConfig) -> StageCost:
    a, job = cfg.eval.autoencoding, cfg.train.nugget2d_ae
    if not a.max_docs:
        return not_estimated("eval_nugget2d_ae", "eval.autoencoding.max_docs=0: every window of build_lm's "
                             f"{a.split} split that holds each length, a count known once built", EVAL)
    soft, systems = cfg.nugget2d.soft_prompt_tokens, []
    for length in a.lengths:
        for r in job.ratios:
            new = length + a.extra_tokens
            systems.append(Generation(f"nugget2d r={r:g}, {length} tokens", length, nuggets(r, length) + soft, new))
            if job.icae:
                slots = nuggets(r, job.max_doc_tokens)
                systems.append(Generation(f"icae r={r:g}, {length} tokens", length + slots, slots + soft, new))
    return _stage(cfg, "eval_nugget2d_ae", a.max_docs, a.batch_size, systems,
                  [f"{a.max_docs} documents per length (eval.autoencoding.max_docs)"])


def eval_efficiency(cfg: PipelineConfig) -> StageCost:
    """Per context length and system: the document pass(es), then 1 + 2 x repeats decodes of the prompt
    and warmup + steps tokens (the short ones of each pair counted as long: an upper bound); the two
    training steps per system are left out (a handful of forward-backward passes)."""
    e, prompt = cfg.eval.efficiency, cfg.data.lm.prompt_tokens
    systems: list[tuple[int, Generation]] = []
    for context in e.contexts:
        labels = [("full", context)] + [(f"{s} r={r:g}", nuggets(r, context)) for s in ("nugget2d", *e.presses)
                                        for r in e.ratios]
        for label, kept in labels:
            systems += [(e.prefill_repeats, Generation(f"{label}, {context} tokens: document pass", context, context, 0)),
                        (1 + 2 * e.repeats, Generation(f"{label}, {context} tokens: decodes", prompt, kept + prompt,
                                                       e.warmup_tokens + e.steps))]
    found = lm_shape(cfg.model.lm, chat=True)
    if not isinstance(found.shape, DecoderShape):
        return not_estimated("eval_efficiency", found.basis, EVAL)
    work = tuple(generation_work(found.shape, n, 1, dtype_bytes(cfg), g) for n, g in systems)
    return StageCost("eval_efficiency", EVAL, work, (f"model: {found.basis}", f"prompt = data.lm.prompt_tokens = {prompt}",
                                                     "every decode counted at warmup + steps tokens: an upper bound",
                                                     "training steps left out"))
