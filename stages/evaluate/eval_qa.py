"""Stage ``eval_qa``: SQuAD-style question answering (Nugget2D §6.2, table 3).

Zero-shot systems on ``build_lm``'s ``qa.jsonl`` (on profile=tiny a labelled stand-in:
cloze questions cut from real Wikipedia sentences), all with the appendix-C prompt and
greedy decoding capped at ``eval.qa.max_new_tokens`` (64 in the paper):
Full, NoDoc, LMSumm (the base LM summarises the document to ~``lmsumm_ratio`` of its
words, then answers from the summary; the realised summary ratio is reported),
Nugget2D at each ratio of ``eval.qa.nugget_ratios`` (5x, 10x) from ``train_nugget2d``:
the model trained at that ratio when the stage trained one (``train.nugget2d.extra_ratios``;
paper §6.2), else its main model compressing at that ratio; the table notes say which,
and the training-free KV presses (StreamingLLM, SnapKV, key-norm; ``eval.presses``) at
each of those ratios: the base LM's KV of the document, keeping per layer and KV head as
many positions as Nugget2D keeps per layer (`stages.evaluate.lm.prompted`).

Accuracy: the appendix-D normalised output contains the normalised answer
(`stages.evaluate.lm.normalize`), scored by `stages.evaluate.lm.scoring` (the function
``nugget eval`` calls too). Decoding cost per system: attended states per generated
token, KV bytes, ms per decoding step, time before decoding. Outputs: the
`stages.artifacts.evaluate.EvalTable` (accuracy with its Wilson 95% interval, n per row; each
system's id and the table-3 row it reproduces; a system whose answers are constant, loops or
empty, or that answers 0 of n where NoDoc also does, flagged uninformative: `qa_flag`) and
``examples.jsonl``.
"""

from __future__ import annotations

import statistics
from dataclasses import replace

from nugget_core.nugget2d.prompts import PromptFormat, encode, encode_parts
from stages.artifacts.data import LMRecords
from stages.artifacts.evaluate import Column, EvalTable, TableRow
from stages.artifacts.train import TrainedNugget2D
from stages.common.degenerate import combine, generation_flags, zero_with_zero_baseline
from stages.common.progress import progress_logger
from stages.common.prompts import encode_task_records
from stages.common.records import batches, read_records, stand_in_label
from stages.config.evaluation import PRESS_SYSTEMS
from stages.evaluate.lm.presses import press_config, press_notes
from stages.evaluate.lm.prompted import lmsumm_batch, run_batches
from stages.evaluate.lm.scoring import score_qa
from stages.evaluate.publish import publish
from stages.framework.stage import Stage, StageContext

log = progress_logger("nugget.eval_qa")
COMPRESSOR_STAGE = "train_nugget2d"
COLUMNS = [
    Column("accuracy", "acc."), Column("context_ratio", "context ratio", "{:.3f}"),
    Column("summary_ratio", "summary ratio", "{:.3f}"),
    Column("attended_states", "attended states/token", "{:.1f}"), Column("kv_bytes", "KV bytes", "{:.0f}"),
    Column("ms_per_token", "ms/step (incl. prompt pass)", "{:.1f}"), Column("encode_ms", "ms before decoding", "{:.0f}"),
    Column("generated_tokens", "tokens/answer", "{:.1f}"),
]


def paper_row(system: str, ratio: float | None = None) -> str:
    """The row of Nugget2D table 3 that ``system`` (at compression ``ratio``) reproduces."""
    if system in ("lmsumm", "nugget2d", *PRESS_SYSTEMS):
        return f"{system}_{1 / ratio:g}x"
    return system


def qa_flag(system: str, outputs: dict[str, list[str]], hits: dict[str, int], n: int) -> str | None:
    """Why ``system``'s answers are uninformative (`stages.common.degenerate`): constant, looping
    or empty answers, or 0 of ``n`` correct where NoDoc (when it ran) also got 0."""
    return combine(generation_flags(outputs[system]),
                   zero_with_zero_baseline(hits[system], n, hits.get("nodoc"), "the no-document baseline"))


class EvalQA(Stage):
    name = "eval_qa"
    upstream = ("prepare_lm", "build_lm", COMPRESSOR_STAGE)
    config_keys = ("eval.qa", "eval.presses", "eval.dtype", "prompts")
    uses_device = True

    def run(self, ctx: StageContext) -> None:
        cfg = ctx.cfg("eval.qa")
        records = read_records(LMRecords.read(ctx.inputs["build_lm"]).records("qa"), cfg.split, cfg.max_examples)
        compressor = TrainedNugget2D.read(ctx.inputs[COMPRESSOR_STAGE], COMPRESSOR_STAGE)
        soft = compressor.soft_prompt
        model, base = compressor.load_from(ctx.inputs["prepare_lm"], ctx.device, ctx.cfg("eval.dtype"))
        tokenizer = base.tokenizer()
        fmt = PromptFormat(ctx.cfg("prompts").format, tokenizer)
        docs, prompts = encode_task_records(tokenizer, records, fmt, cfg.max_doc_tokens)
        doc_tokens = [len(d) for d in docs]
        common = {"batch_size": cfg.batch_size, "log": log, "max_new_tokens": cfg.max_new_tokens}

        rows, examples = [], []
        trained_at: dict[str, float | None] = {}  # Nugget2D row -> ratio its model was trained at
        hits: dict[str, int] = {}  # per system: questions answered correctly
        outputs: dict[str, list[str]] = {}  # per system: its answers

        def score(system: str, gens, extra: dict[str, float] | None = None, per_example=None,
                  row_id: str = "") -> None:
            scored = score_qa(gens, records, doc_tokens, cfg)
            metrics = {**scored.metrics, **(extra or {})}
            rows.append(TableRow(system, metrics, n=scored.n, interval=scored.interval,
                                 paper_row=row_id or paper_row(system)))
            hits[system], outputs[system] = scored.hits, [g.text for g in gens]
            # the row's own keys after id and system, then what the system adds (LMSumm's summary)
            examples.extend({"id": e["id"], "system": system, **e, **(per_example[i] if per_example else {})}
                            for i, e in enumerate(scored.examples))
            log.info("eval_qa: %s accuracy %.1f", system, metrics["accuracy"])

        for system in cfg.systems:
            if system == "full":
                score("full", run_batches("full", model, tokenizer, docs, prompts, ratio=None, **common))
            elif system == "nodoc":
                bare = encode_parts(tokenizer, [fmt.parts("", r["instruction"]) for r in records])
                score("nodoc", run_batches("nodoc", model, tokenizer, *bare, ratio=None, **common))
            elif system == "lmsumm":
                summaries = []
                for chunk in batches([r["document"] for r in records], cfg.batch_size):
                    summaries += lmsumm_batch(model, tokenizer, chunk, fmt, ratio=cfg.lmsumm_ratio,
                                              max_new_tokens=cfg.lmsumm_max_new_tokens,
                                              doc_limit=cfg.max_doc_tokens)
                    log.info("eval_qa: lmsumm summaries %d/%d", len(summaries), len(records))
                document_tokens = [len(d) for d in encode(tokenizer, [r["document"] for r in records],
                                                          cfg.max_doc_tokens)]
                ratios = [s.tokens / max(n, 1) for s, n in zip(summaries, document_tokens, strict=True)]
                summed = encode_parts(tokenizer, [fmt.parts(s.text, r["instruction"])
                                                  for s, r in zip(summaries, records, strict=True)])
                gens = run_batches("lmsumm", model, tokenizer, *summed, ratio=None,
                                   extra_encode_ms=[s.ms for s in summaries], **common)
                score("lmsumm", gens, {"summary_ratio": statistics.fmean(ratios)},
                      [{"summary": s.text, "summary_ratio": r} for s, r in zip(summaries, ratios, strict=True)],
                      row_id=paper_row("lmsumm", cfg.lmsumm_ratio))
            elif system in PRESS_SYSTEMS:  # the base LM's KV at Nugget2D's budget of each ratio
                for r in cfg.nugget_ratios:
                    name = f"{system} {1 / r:g}x"
                    score(name, run_batches(name, model, tokenizer, docs, prompts, ratio=r, press=system,
                                            press_config=press_config(ctx.cfg("eval.presses")), **common),
                          row_id=paper_row(system, r))
            else:  # nugget2d at each ratio: the model trained at that ratio where there is one
                for r in cfg.nugget_ratios:
                    name = f"nugget2d {1 / r:g}x"
                    trained = compressor.at_ratio(r)
                    own = trained is not None and trained.path != compressor.path
                    at_r = trained.load_from(ctx.inputs["prepare_lm"], ctx.device, ctx.cfg("eval.dtype"))[0] if own else model
                    trained_at[name] = trained.ratio if trained is not None else compressor.ratio
                    score(name, run_batches(name, at_r, tokenizer, docs, prompts, ratio=r,
                                            soft_prompt=soft, **common), row_id=paper_row("nugget2d", r))
                    del at_r  # a variant's weights are freed before the next system
        rows = [replace(r, flag=flag) if (flag := qa_flag(r.system, outputs, hits, len(records))) else r for r in rows]
        label = stand_in_label(records)
        notes = [f"{len(records)} examples of split {cfg.split!r}" + (f"; stand-in: {label}" if label else "")
                 + f"; prompts laid out as {fmt.name} (appendix-C text)",
                 "Full / NoDoc / LMSumm: base LM without adapters; Nugget2D: train_nugget2d checkpoint "
                 f"({'with' if soft else 'without'} its soft prompt), zero-shot"
                 + "".join(f"; {name}: the model trained at r = {'?' if r is None else f'{r:g}'}"
                           for name, r in trained_at.items()) + ".",
                 *press_notes(ctx.cfg("eval.presses"), cfg.systems, "ceil(r n) of n document tokens"),
                 f"ms/step: generation wall time (prompt pass + cached steps) / steps, batch of {cfg.batch_size}; "
                 "KV bytes at the end of decoding; attended states: mean over generated tokens."]
        ctx.set_tags({"stand_in": label or "none"})
        publish(ctx, EvalTable("SQuAD-style QA accuracy (Nugget2D table 3)", COLUMNS, rows, notes, label), examples)
