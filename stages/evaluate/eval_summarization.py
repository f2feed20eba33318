"""Stage ``eval_summarization``: CNN/DailyMail-style summarisation (Nugget2D §6.3, table 4).

Systems, all with the appendix-C prompt ("... Please summarize the above document in
one sentence.") and greedy decoding capped at ``eval.summarization.max_new_tokens``:

- ``full_zs``: the base LM, zero-shot, reading the whole document part;
- ``full_ft``: the base LM fine-tuned on the task (``train_full_ft``: one LoRA adapter,
  merged for decoding), reading the whole document part;
- ``nugget2d_ft``: Nugget2D at ``nugget_ratio`` (10x): ``train_nugget2d``'s compressor
  fine-tuned on the task (``train_nugget2d_ft``, objective ``finetune``, no soft prompt);
- ``streaming_llm`` / ``snapkv`` / ``key_norm``: training-free KV presses of the base
  LM's document KV at Nugget2D's budget (``nugget_ratio``; settings ``eval.presses``).

The two fine-tuning stages tokenise the records as this stage does
(`stages.common.prompts`). ROUGE-1/2/L F1 x 100 with stemming and the decoding cost per
system, scored by `stages.evaluate.lm.scoring` (the function ``nugget eval`` calls too).
Outputs: the `stages.artifacts.evaluate.EvalTable` (ROUGE with standard errors, n per
row, each system's table-4 row; a system whose summaries are constant, loops or empty flagged
uninformative, `stages.common.degenerate`) and ``examples.jsonl``. On
profile=tiny the data is a labelled stand-in (lead sentence of a real news article as
the summary of the rest).
"""

from __future__ import annotations

from nugget_core.nugget2d.prompts import PromptFormat
from stages.artifacts.data import BaseLM, LMRecords
from stages.artifacts.evaluate import Column, EvalTable, TableRow
from stages.artifacts.train import FullFinetunedLM, TrainedNugget2D
from stages.common.degenerate import generation_flags
from stages.common.progress import progress_logger
from stages.common.prompts import encode_task_records
from stages.common.records import read_records, stand_in_label
from stages.config.evaluation import PRESS_SYSTEMS
from stages.evaluate.lm.presses import press_config, press_notes
from stages.evaluate.lm.prompted import run_batches
from stages.evaluate.lm.rouge import ROUGE_TYPES
from stages.evaluate.lm.scoring import score_summarization
from stages.evaluate.publish import publish
from stages.framework.stage import Stage, StageContext

log = progress_logger("nugget.eval_summarization")
COLUMNS = [
    Column("rouge1", "R1"), Column("rouge2", "R2"), Column("rougeL", "RL"),
    Column("context_ratio", "context ratio", "{:.3f}"),
    Column("attended_states", "attended states/token", "{:.1f}"), Column("kv_bytes", "KV bytes", "{:.0f}"),
    Column("ms_per_token", "ms/step (incl. prompt pass)", "{:.1f}"), Column("encode_ms", "ms before decoding", "{:.0f}"),
    Column("generated_tokens", "tokens/summary", "{:.1f}"),
]


class EvalSummarization(Stage):
    name = "eval_summarization"
    upstream = ("prepare_lm", "build_lm", "train_full_ft", "train_nugget2d_ft")
    config_keys = ("eval.summarization", "eval.presses", "eval.dtype", "prompts")
    uses_device = True

    def run(self, ctx: StageContext) -> None:
        cfg = ctx.cfg("eval.summarization")
        records = read_records(LMRecords.read(ctx.inputs["build_lm"]).records("summarization"), cfg.split,
                               cfg.max_examples)
        base = BaseLM.read(ctx.inputs["prepare_lm"], "chat")  # the QA / summarisation base (Nugget2D §3)
        tokenizer = base.tokenizer()
        placement = (ctx.device, ctx.cfg("eval.dtype"))
        nugget2d = TrainedNugget2D.read(ctx.inputs["train_nugget2d_ft"], "train_nugget2d_ft").load(base, *placement)
        fmt = PromptFormat(ctx.cfg("prompts").format, tokenizer)
        docs, prompts = encode_task_records(tokenizer, records, fmt, cfg.max_doc_tokens)
        doc_tokens = [len(d) for d in docs]
        common = {"batch_size": cfg.batch_size, "log": log, "max_new_tokens": cfg.max_new_tokens}

        rows, examples = [], []
        for system in cfg.systems:
            press = system if system in PRESS_SYSTEMS else None
            ratio = cfg.nugget_ratio if system == "nugget2d_ft" or press else None
            # full_zs and the presses: the Full path of any Nugget2D model is the bare base LM (adapters off)
            model = (FullFinetunedLM.read(ctx.inputs["train_full_ft"]).load(base, nugget2d.config, *placement)
                     if system == "full_ft" else nugget2d)
            gens = run_batches(system, model, tokenizer, docs, prompts, ratio=ratio, press=press,
                               press_config=press_config(ctx.cfg("eval.presses")), **common)
            scored = score_summarization(gens, records, doc_tokens)
            metrics = scored.metrics
            rows.append(TableRow(system if ratio is None else f"{system} {1 / ratio:g}x", metrics, n=scored.n,
                                 stderr=scored.stderr, paper_row=system if ratio is None else
                                 f"{'nugget2d' if press is None else press}_{1 / ratio:g}x",
                                 flag=generation_flags([g.text for g in gens]) or ""))
            examples.extend({"id": e["id"], "system": system, **e} for e in scored.examples)  # id, system first
            log.info("eval_summarization: %s %s", system, {t: round(metrics[t], 2) for t in ROUGE_TYPES})
        label = stand_in_label(records)
        notes = [f"{len(records)} examples of split {cfg.split!r}" + (f"; stand-in: {label}" if label else "")
                 + f"; prompts laid out as {fmt.name} (appendix-C text)",
                 "full_ft: train_full_ft (base LM + LoRA, merged); nugget2d_ft: train_nugget2d_ft "
                 "(train_nugget2d's compressor fine-tuned on the task); full_zs: the base LM.",
                 *press_notes(ctx.cfg("eval.presses"), cfg.systems, f"ceil(r n) of n document tokens, r = {cfg.nugget_ratio:g}"),
                 f"ms/step: generation wall time (prompt pass + cached steps) / steps, batch of {cfg.batch_size}; "
                 "KV bytes at the end of decoding; attended states: mean over generated tokens."]
        ctx.set_tags({"stand_in": label or "none"})
        publish(ctx, EvalTable("CNN/DailyMail-style summarisation ROUGE (Nugget2D table 4)", COLUMNS, rows, notes, label),
                examples)
