"""The CNN/DailyMail-style summarisation evaluation of Nugget2D §6.3 (table 4) as a recipe,
`evaluate_summarization`: the procedure of the ``eval_summarization`` stage and of ``nugget
eval --task summarization``, callable outside Ray (no stage context, no MLflow)::

    from stages.nugget2d.config import SummarizationEval
    from stages.nugget2d.lm.summarization import evaluate_summarization
    from nugget_core.nugget2d.prompts import PromptFormat
    result = evaluate_summarization(model, tokenizer, records, SummarizationEval(systems=["full_zs", "nugget2d_ft"]),
                                    prompt_format=PromptFormat("inst", tokenizer))
    print(result.table.to_markdown())

Steps: encode each record's document and instruction (appendix-C prompt); for every system of
``section.systems`` decode greedily (`stages.nugget2d.lm.prompted`), score ROUGE and cost
(`stages.nugget2d.lm.scoring`: per article, the unit its intervals resample and two systems pair
on) and flag constant, looping or empty summaries; score the lead-3 summary of every document on
the same references, the competence floor of each ROUGE (`EvalTable.floors`) and a row of its own
(`LEAD_ROW`); write the notes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from logging import Logger
from typing import TYPE_CHECKING, Any

from stages.artifacts.evaluate import Column, EvalTable, TableRow
from stages.common.degenerate import generation_flags
from stages.common.floors import Floor
from stages.common.progress import progress_logger
from stages.common.prompts import encode_task_records
from stages.common.records import stand_in_label
from stages.common.resampling import MIN_UNITS
from stages.evaluation.rouge import SUMMARY_ROUGE_TYPES, rouge_mean, rouge_per_example
from stages.evaluation.samples import Sample
from stages.evaluation.task_floors import lead
from stages.nugget2d.config import PRESS_SYSTEMS, PressSection, SummarizationEval
from stages.nugget2d.lm.evaluation import Evaluation
from stages.nugget2d.lm.presses import press_config, press_notes
from stages.nugget2d.lm.prompted import fed_texts, run_batches
from stages.nugget2d.lm.scoring import article_units, score_summarization

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase

    from nugget_core.nugget2d import Nugget2DModel
    from nugget_core.nugget2d.prompts import PromptFormat

LOG = progress_logger("nugget.eval_summarization")
TITLE = "CNN/DailyMail-style summarisation ROUGE (Nugget2D table 4)"
COLUMNS = [
    Column("rouge1", "R1"), Column("rouge2", "R2"), Column("rougeLsum", "RLsum"), Column("rougeL", "RL (no split)"),
    Column("context_ratio", "context ratio", "{:.3f}"),
    Column("attended_states", "attended states/token", "{:.1f}"), Column("kv_bytes", "KV bytes", "{:.0f}"),
    Column("ms_per_token", "ms/step (incl. prompt pass)", "{:.1f}"), Column("encode_ms", "ms before decoding", "{:.0f}"),
    Column("generated_tokens", "tokens/summary", "{:.1f}"),
]
ROUGE_NOTE = ("ROUGE F1 x 100 (rouge-score, stemmed), mean over examples ± standard error. RLsum: ROUGE-Lsum, the "
              "summary-level LCS over the sentences (one per line: CNN/DailyMail's highlights, the output split by "
              "sentence), what CNN/DailyMail papers report as ROUGE-L and what table 4's RL is compared with; RL (no "
              "split): ROUGE-L of the texts taken whole.")
MODELS_NOTE = ("full_zs: the base LM of the given Nugget2D model; nugget2d_ft: that model; "
               "full_ft: the fine-tuned LM given.")
LEAD_SENTENCES = 3  # lead-3: CNN/DailyMail's standard extractive baseline
LEAD_ROW = f"lead-{LEAD_SENTENCES} (floor)"


def evaluate_summarization(
    model: Nugget2DModel,
    tokenizer: PreTrainedTokenizerBase,
    records: Sequence[dict[str, Any]],
    section: SummarizationEval,
    *,
    prompt_format: PromptFormat,
    presses: PressSection | None = None,
    soft_prompt: bool = False,
    full_ft: Callable[[], Nugget2DModel] | None = None,
    models_note: str = MODELS_NOTE,
    ignores_input: Mapping[str, str] | None = None,
    log: Logger = LOG,
) -> Evaluation:
    """Every system of ``section.systems`` on ``records`` (``build_lm``'s
    ``summarization.jsonl`` rows: ``id``, ``document``, ``instruction``, ``answer``), greedy:

    - ``full_zs``: ``model``'s base LM (every adapter off) reading the whole document part;
    - ``full_ft``: the fine-tuned LM that ``full_ft()`` loads (called when the system comes up, so
      its weights live only while it decodes), reading the whole document part;
    - ``nugget2d_ft``: ``model`` compressing at ``section.nugget_ratio``, decoding with the soft
      prompt when ``soft_prompt``;
    - a KV press (``streaming_llm``, ``snapkv``, ``key_norm``; settings ``presses``, default
      `PressSection()`): the base LM's document KV at Nugget2D's budget.

    ``models_note``: the table note saying where the models come from. ``ignores_input``: per
    system of ``section.systems``, why its model ignores its input (`stages.nugget2d.lm.evaluation.
    ignores_input`; its row carries it). Returns the `EvalTable` (ROUGE-1/2, ROUGE-Lsum and ROUGE-L
    with its `UnitSample` and 95% bootstrap interval over articles, n, context ratio and decoding cost
    per row; uninformative rows flagged; the lead-3 row and floors) and one example row per record
    and system.
    """
    if not records:
        raise ValueError("evaluate_summarization: no records")
    if "full_ft" in section.systems and full_ft is None:
        raise ValueError("evaluate_summarization: systems include full_ft, but no full_ft loader was given")
    presses = presses if presses is not None else PressSection()
    fmt = prompt_format
    docs, prompts = encode_task_records(tokenizer, records, fmt, section.max_doc_tokens)
    doc_tokens = [len(d) for d in docs]
    fed = fed_texts(tokenizer, docs, prompts)  # every system reads the same document part and prompt
    common: dict[str, Any] = {"batch_size": section.batch_size, "log": log, "max_new_tokens": section.max_new_tokens}

    rows: list[TableRow] = []
    examples: list[dict[str, Any]] = []
    for system in section.systems:
        press = system if system in PRESS_SYSTEMS else None
        ratio = section.nugget_ratio if system == "nugget2d_ft" or press else None
        # full_zs and the presses: the Full path of any Nugget2D model is the bare base LM (adapters off)
        decoder = full_ft() if system == "full_ft" and full_ft is not None else model
        gens = run_batches(system, decoder, tokenizer, docs, prompts, ratio=ratio, press=press,
                           press_config=press_config(presses), soft_prompt=soft_prompt, **common)
        del decoder  # a fine-tuned LM's weights are freed before the next system
        scored = score_summarization(gens, records, doc_tokens)
        metrics: dict[str, float | None] = {**scored.metrics}
        rows.append(TableRow(system if ratio is None else f"{system} {1 / ratio:g}x", metrics, n=scored.n,
                             interval=scored.interval, paper_row=system if ratio is None else
                             f"{'nugget2d' if press is None else press}_{1 / ratio:g}x",
                             flag=generation_flags([g.text for g in gens]) or "", units=scored.units,
                             ignores_input=(ignores_input or {}).get(system, "")))
        examples.extend(
            Sample(r["id"], system, {"document": r["document"], "instruction": r["instruction"], **fed[i]},
                   r["answer"], e["output"], {k: v for k, v in e.items() if k not in ("id", "output", "reference")},
                   {"ratio": ratio}).row()
            for i, (r, e) in enumerate(zip(records, scored.examples, strict=True)))
        log.info("eval_summarization: %s %s", system, {t: round(scored.metrics[t], 2) for t in SUMMARY_ROUGE_TYPES})
    rows.append(lead_row(records))
    floors = {t: Floor(float(v), True, f"the lead-{LEAD_SENTENCES} summary of each document")
              for t in SUMMARY_ROUGE_TYPES if (v := rows[-1].metrics[t]) is not None}
    label = stand_in_label(list(records))
    notes = [f"{len(records)} examples of split {section.split!r}" + (f"; stand-in: {label}" if label else "")
             + f"; prompts laid out as {fmt.name} (appendix-C text); n = articles, each ROUGE's [low, high]: its 95% "
             f"percentile bootstrap interval over them (none from fewer than {MIN_UNITS})",
             models_note,
             ROUGE_NOTE,
             f"{LEAD_ROW}: the first {LEAD_SENTENCES} sentences of each whole document as its summary, on the same "
             "references: the competence floor of every ROUGE column (a system not above it does not summarise).",
             *press_notes(presses, section.systems, f"ceil(r n) of n document tokens, r = {section.nugget_ratio:g}"),
             f"ms/step: generation wall time (prompt pass + cached steps) / steps, batch of {section.batch_size}; "
             "KV bytes at the end of decoding; attended states: mean over generated tokens."]
    return Evaluation(EvalTable(TITLE, COLUMNS, rows, notes, label, floors), examples)


def lead_row(records: Sequence[dict[str, Any]]) -> TableRow:
    """The `LEAD_ROW`: the lead-3 summary of each record's document (`stages.evaluation.task_floors.
    lead`) scored against its reference as the systems are (ROUGE per article, its units and
    intervals over the same articles: `stages.evaluation.task_floors.lead_floor`'s value)."""
    per = rouge_per_example([lead(r["document"], LEAD_SENTENCES) for r in records], [r["answer"] for r in records],
                            SUMMARY_ROUGE_TYPES)
    units = article_units(per, [str(r["id"]) for r in records])
    return TableRow(LEAD_ROW, dict(rouge_mean(per)), n=len(records), units=units,
                    interval={t: b for t, u in units.items() if (b := u.interval()) is not None},
                    note="competence floor: no model")
