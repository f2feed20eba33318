"""The SQuAD-style QA evaluation of Nugget2D §6.2 (table 3) as a recipe, `evaluate_qa`: the
procedure of the ``eval_qa`` stage and of ``nugget eval --task qa``, callable outside Ray
(no stage context, no MLflow), e.g. from a notebook::

    from stages.nugget2d.config import QAEval
    from stages.nugget2d.lm.qa import evaluate_qa
    from nugget_core.nugget2d.prompts import PromptFormat
    result = evaluate_qa(model, tokenizer, records, QAEval(systems=["full", "nugget2d"]),
                         prompt_format=PromptFormat("inst", tokenizer))
    print(result.table.to_markdown())

Steps: encode each record's document and question (appendix-C prompt); for every system of
``section.systems`` decode greedily (`stages.nugget2d.lm.prompted`) and score
(`stages.nugget2d.lm.scoring`: accuracy with its `UnitSample` over the questions' documents, the
same for every system, so two pair); flag uninformative systems (`qa_flag`); the no-document
system's accuracy on the same questions is the competence floor (`EvalTable.floors`); write the notes.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from logging import Logger
from typing import TYPE_CHECKING, Any

from nugget_core.nugget2d.prompts import PromptFormat, encode, encode_parts
from stages.artifacts.evaluate import Column, EvalTable, TableRow
from stages.common.degenerate import combine, generation_flags, zero_with_zero_baseline
from stages.common.floors import Floor
from stages.common.progress import progress_logger
from stages.common.prompts import encode_task_records
from stages.common.records import batches, stand_in_label
from stages.common.resampling import MIN_UNITS
from stages.evaluation.samples import Sample
from stages.nugget2d.config import PRESS_SYSTEMS, PressSection, QAEval
from stages.nugget2d.lm.evaluation import Evaluation
from stages.nugget2d.lm.normalize import gold_answers
from stages.nugget2d.lm.presses import press_config, press_notes
from stages.nugget2d.lm.prompted import Generation, fed_texts, lmsumm_batch, run_batches
from stages.nugget2d.lm.scoring import score_qa

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase

    from nugget_core.nugget2d import Nugget2DModel

LOG = progress_logger("nugget.eval_qa")
TITLE = "SQuAD-style QA accuracy (Nugget2D table 3)"
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
        if ratio is None:
            raise ValueError(f"paper_row: system {system!r} has one row per ratio; give its ratio")
        return f"{system}_{1 / ratio:g}x"
    return system


def qa_flag(system: str, outputs: dict[str, list[str]], hits: dict[str, int], n: int) -> str | None:
    """Why ``system``'s answers are uninformative (`stages.common.degenerate`): constant, looping
    or empty answers, or 0 of ``n`` correct where NoDoc (when it ran) also got 0."""
    return combine(generation_flags(outputs[system]),
                   zero_with_zero_baseline(hits[system], n, hits.get("nodoc"), "the no-document baseline"))


@dataclass(frozen=True)
class RatioModel:
    """The Nugget2D model that compresses at some ratio, the ratio it was trained at (None: not
    known) and why it ignores its compressed input ("" = it reads it, or no check was made:
    `stages.nugget2d.artifacts.ignores_input`)."""

    model: Nugget2DModel
    trained_ratio: float | None
    ignores_input: str = ""


@dataclass
class _Scored:
    """The rows, per-example rows, correct answers and outputs of the systems scored so far."""

    records: Sequence[dict[str, Any]]
    doc_tokens: list[int]
    section: QAEval
    log: Logger
    rows: list[TableRow] = field(default_factory=list)
    examples: list[dict[str, Any]] = field(default_factory=list)
    hits: dict[str, int] = field(default_factory=dict)  # per system: questions answered correctly
    outputs: dict[str, list[str]] = field(default_factory=dict)  # per system: its answers

    def add(self, system: str, gens: list[Generation], row_id: str, fed: list[dict[str, str]],
            extra: dict[str, float] | None = None, per_example: list[dict[str, Any]] | None = None,
            ratio: float | None = None, ignores_input: str = "") -> None:
        """Score ``system``'s generations; ``fed``: per record, the context and prompt texts it
        was fed (`fed_texts`); ``per_example``: what the system adds per record (LMSumm's summary);
        ``ignores_input``: why its model ignores its compressed input ("" = it does not)."""
        scored = score_qa(gens, self.records, self.doc_tokens, self.section)
        metrics: dict[str, float | None] = {**scored.metrics, **(extra or {})}
        self.rows.append(TableRow(system, metrics, n=scored.n, interval=scored.interval, paper_row=row_id,
                                  units=scored.units, ignores_input=ignores_input))
        self.hits[system], self.outputs[system] = scored.hits, [g.text for g in gens]
        self.examples.extend(
            Sample(r["id"], system, {"document": r["document"], "question": r["instruction"], **fed[i]},
                   r["answer"], e["output"],
                   {k: v for k, v in e.items() if k not in ("id", "output", "answer")}
                   | {"gold_answers": gold_answers(r)} | (per_example[i] if per_example else {}),
                   {"ratio": ratio}).row()
            for i, (r, e) in enumerate(zip(self.records, scored.examples, strict=True)))
        self.log.info("eval_qa: %s accuracy %.1f", system, scored.metrics["accuracy"])

    def flagged(self) -> list[TableRow]:
        """The rows, each uninformative one with its reason (`qa_flag`)."""
        n = len(self.records)
        return [replace(r, flag=flag) if (flag := qa_flag(r.system, self.outputs, self.hits, n)) else r
                for r in self.rows]

    def floors(self) -> dict[str, Floor]:
        """The accuracy's competence floor: the no-document system's on the same questions (none
        where it did not run)."""
        nodoc = next((r for r in self.rows if r.system == "nodoc"), None)
        value = nodoc.metrics["accuracy"] if nodoc is not None else None
        return {"accuracy": Floor(float(value), True, "the no-document system (nodoc) on the same questions")} \
            if value is not None else {}


def _lmsumm(model: Nugget2DModel, tokenizer: PreTrainedTokenizerBase, records: Sequence[dict[str, Any]],
            fmt: PromptFormat, section: QAEval, log: Logger, common: dict[str, Any],
            ) -> tuple[list[Generation], list[dict[str, str]], dict[str, float], list[dict[str, Any]]]:
    """LMSumm: the base LM summarises each document, then answers from its summary; the answers,
    the texts fed to answer (`fed_texts`), the realised summary ratio and each example's summary."""
    summaries = []
    for chunk in batches([r["document"] for r in records], section.batch_size):
        summaries += lmsumm_batch(model, tokenizer, chunk, fmt, ratio=section.lmsumm_ratio,
                                  max_new_tokens=section.lmsumm_max_new_tokens, doc_limit=section.max_doc_tokens)
        log.info("eval_qa: lmsumm summaries %d/%d", len(summaries), len(records))
    document_tokens = [len(d) for d in encode(tokenizer, [r["document"] for r in records], section.max_doc_tokens)]
    ratios = [s.tokens / max(n, 1) for s, n in zip(summaries, document_tokens, strict=True)]
    summed = encode_parts(tokenizer, [fmt.parts(s.text, r["instruction"]) for s, r in zip(summaries, records, strict=True)])
    gens = run_batches("lmsumm", model, tokenizer, *summed, ratio=None, extra_encode_ms=[s.ms for s in summaries],
                       **common)
    return (gens, fed_texts(tokenizer, *summed), {"summary_ratio": statistics.fmean(ratios)},
            [{"summary": s.text, "summary_ratio": r} for s, r in zip(summaries, ratios, strict=True)])


def evaluate_qa(
    model: Nugget2DModel,
    tokenizer: PreTrainedTokenizerBase,
    records: Sequence[dict[str, Any]],
    section: QAEval,
    *,
    prompt_format: PromptFormat,
    presses: PressSection | None = None,
    soft_prompt: bool = False,
    at_ratio: Callable[[float], RatioModel] | None = None,
    compressor: str = "the given Nugget2D model",
    log: Logger = LOG,
) -> Evaluation:
    """Every system of ``section.systems`` on ``records`` (``build_lm``'s ``qa.jsonl`` rows:
    ``id``, ``document``, ``instruction``, ``answer``), zero-shot with greedy decoding:

    - ``full`` / ``nodoc`` / ``lmsumm``: ``model``'s base LM (every adapter off) with the whole
      document, none, or its own summary of it (~``section.lmsumm_ratio`` of its words);
    - ``nugget2d``: at each ratio of ``section.nugget_ratios``, the model ``at_ratio(r)`` returns
      (default: ``model``), decoding with the soft prompt when ``soft_prompt``;
    - a KV press (``streaming_llm``, ``snapkv``, ``key_norm``; settings ``presses``, default
      `PressSection()`): the base LM's document KV at Nugget2D's budget of each ratio.

    ``prompt_format``: the prompt layout (appendix C's text). ``compressor`` names where the
    Nugget2D model comes from in the table's notes. Returns the `EvalTable` (accuracy with its
    Wilson 95% interval, n, context ratio and decoding cost per row; uninformative rows flagged)
    and one example row per record and system.
    """
    if not records:
        raise ValueError("evaluate_qa: no records")
    presses = presses if presses is not None else PressSection()
    model_at = at_ratio if at_ratio is not None else (lambda r: RatioModel(model, model.config.ratio))
    fmt = prompt_format
    docs, prompts = encode_task_records(tokenizer, records, fmt, section.max_doc_tokens)
    common: dict[str, Any] = {"batch_size": section.batch_size, "log": log, "max_new_tokens": section.max_new_tokens}
    scored = _Scored(records, [len(d) for d in docs], section, log)
    fed = fed_texts(tokenizer, docs, prompts)  # what Full, Nugget2D and the presses read
    trained_at: dict[str, float | None] = {}  # Nugget2D row -> ratio its model was trained at

    for system in section.systems:
        if system == "full":
            scored.add("full", run_batches("full", model, tokenizer, docs, prompts, ratio=None, **common), "full", fed)
        elif system == "nodoc":
            bare = encode_parts(tokenizer, [fmt.parts("", r["instruction"]) for r in records])
            scored.add("nodoc", run_batches("nodoc", model, tokenizer, *bare, ratio=None, **common), "nodoc",
                       fed_texts(tokenizer, *bare))
        elif system == "lmsumm":
            gens, summed, extra, per_example = _lmsumm(model, tokenizer, records, fmt, section, log, common)
            scored.add("lmsumm", gens, paper_row("lmsumm", section.lmsumm_ratio), summed, extra, per_example,
                       ratio=section.lmsumm_ratio)
        elif system in PRESS_SYSTEMS:  # the base LM's KV at Nugget2D's budget of each ratio
            for r in section.nugget_ratios:
                name = f"{system} {1 / r:g}x"
                scored.add(name, run_batches(name, model, tokenizer, docs, prompts, ratio=r, press=system,
                                             press_config=press_config(presses), **common),
                           paper_row(system, r), fed, ratio=r)
        else:  # nugget2d at each ratio: the model trained at that ratio where there is one
            for r in section.nugget_ratios:
                name = f"nugget2d {1 / r:g}x"
                at_r = model_at(r)
                trained_at[name] = at_r.trained_ratio
                scored.add(name, run_batches(name, at_r.model, tokenizer, docs, prompts, ratio=r,
                                             soft_prompt=soft_prompt, **common), paper_row("nugget2d", r),
                           fed, ratio=r, ignores_input=at_r.ignores_input)
                del at_r  # a variant's weights are freed before the next system
    label = stand_in_label(list(records))
    notes = [f"{len(records)} examples of split {section.split!r}" + (f"; stand-in: {label}" if label else "")
             + f"; prompts laid out as {fmt.name} (appendix-C text)",
             f"Full / NoDoc / LMSumm: base LM without adapters; Nugget2D: {compressor} "
             f"({'with' if soft_prompt else 'without'} its soft prompt), zero-shot"
             + "".join(f"; {name}: the model trained at r = {'?' if r is None else f'{r:g}'}"
                       for name, r in trained_at.items()) + ".",
             *press_notes(presses, section.systems, "ceil(r n) of n document tokens"),
             f"ms/step: generation wall time (prompt pass + cached steps) / steps, batch of {section.batch_size}; "
             "KV bytes at the end of decoding; attended states: mean over generated tokens.",
             unit_note(scored.rows[0].units["accuracy"].n, len(records)),
             *([] if "nodoc" in section.systems else
               ["No competence floor: nodoc did not run (the floor is its accuracy on the same questions)."])]
    return Evaluation(EvalTable(TITLE, COLUMNS, scored.flagged(), notes, label, scored.floors()), scored.examples)


def unit_note(documents: int, questions: int) -> str:
    """What the accuracy's interval resamples: the questions (each on a document of its own:
    Wilson's interval) or their documents."""
    if documents == questions:
        return (f"acc. [low, high]: Wilson's 95% interval of {questions} questions, each on a document of its own "
                "(independent); comparisons pair systems on the same questions.")
    return (f"acc. [low, high]: 95% percentile bootstrap interval over the {documents} documents the {questions} "
            "questions ask about (a document's questions share the system's one reading of it: one unit; none "
            f"from fewer than {MIN_UNITS}).")
