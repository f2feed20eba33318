"""Stage ``report``: the papers' tables, measured beside published, as markdown and HTML.

Pure function of its inputs: it reads the upstream artifacts through their contracts
(`stages.artifacts`), never MLflow, so its cache key covers everything it shows. Tables: Nugget
figure 4 (BLEU vs r), figure 5 in numbers, appendix D, tables 2-4, Nugget2D tables 1, 3, 4, its
autoencoding study (§4), the RE paper's tables 8 (= 2, 3), 9 (= 4) and 10 (`stages.report.re_tables`),
then the table of every other registered evaluation stage (an `EvalTable` no paper table
names, collected by the report's inputs: `stages.report.evaluation_tables`; a new evaluation
stage shows up here once registered), and the corpus statistics.
Every measured cell is a number from an upstream file or "not run in this profile";
published numbers (`stages.report.published`) only ever fill the published column.
Each table states the profile, models and data behind its measured column; a last
section lists every paper setting this run does not follow and why
(`stages.report.deviations`, checked against the run's config).

Before the tables, "findings at this scale" checks each paper finding against the
measured cells (`stages.report.findings`), and a training section shows per trained
model its dev loss before -> after training, steps and tokens seen, flagging (and
logging) a model that training made worse (`stages.report.training`). A run header names
the pipeline run that rendered it (`stages.report.header`). Each table links the per-example
outputs of the stage that measured it; figures (the evaluations', and those the report draws:
`stages.report.figures`) are shown with their captions. Every linked file is copied into the
report folder (`stages.report.bundle`), so the folder travels whole (docs/report.md).

Outputs: ``report.md``, ``report.html`` (`stages.report.html_page`), ``results.json`` (every
measured cell, `stages.report.results_json`), ``figures/``, ``samples/<stage>/``, one
``tables/<id>.csv`` per paper table and one ``tables/<stage>.csv`` per collected evaluation;
the whole folder is logged as the run's artifacts. Metrics: the counts of tables, measured
cells, figures, differences and findings by verdict, every measured number reproducing a
published cell (`headline_metrics`); a collected evaluation's numbers are in ``results.json``.
"""

from __future__ import annotations

import html
import time
from collections.abc import Callable, Sequence
from dataclasses import fields
from pathlib import Path
from typing import Any, ClassVar

from stages.artifacts.base import Location, OutputT, Stored
from stages.artifacts.evaluate import NOT_RUN
from stages.artifacts.trainer_state import TrainingSummary
from stages.common.render import csv_text
from stages.common.resampling import MIN_UNITS
from stages.corpora.artifacts import StoredCorpusStatistics
from stages.framework.contract import section_fields
from stages.framework.stage import Stage, StageContext
from stages.nugget.artifacts.results import (
    NuggetAnalysis,
    ReconstructionResults,
    SimilarityResults,
    WithFigures,
)
from stages.report.budgets import training_budgets
from stages.report.bundle import FIGURES, Bundle, data_uri
from stages.report.contract import ReportConfig, ReportInputs
from stages.report.deviations import Deviation, deviations
from stages.report.efficiency_tables import efficiency_tables
from stages.report.evaluation_tables import EvaluationTable, evaluation_tables
from stages.report.figures import (
    Figure,
    bleu_by_length,
    decode_cost_by_context,
    quality_by_compression,
    threshold_figure,
    training_curves,
)
from stages.report.findings import Verdict, counts, judge
from stages.report.header import RunHeader
from stages.report.html_page import Page
from stages.report.nugget_tables import bleu_table, multilingual_token_table, token_table
from stages.report.re_tables import re_tables
from stages.report.results_json import RESULTS, cell_records, headline_name, write_results
from stages.report.similarity_tables import table2, table4
from stages.report.tables import (
    FLAG_MARK,
    ReportTable,
    eval_table,
    examples,
    kv_states,
    measured_by,
    seq2seq_base,
)
from stages.report.training import CAPTION as TRAINING_CAPTION
from stages.report.training import HEADERS as TRAINING_HEADERS
from stages.report.training import INTRO as TRAINING_INTRO
from stages.report.training import TRAINING_STAGES, log_worse, training_rows, training_summaries
from stages.report.verdicts import RULE_ORDER, RULES


def headline_metrics(tables: Sequence[ReportTable]) -> dict[str, float]:
    """Every measured number that reproduces a published cell, named for a person to read
    (`headline_name`: ``nugget.table2.nugget_mt_0.1.pi``, with ``.../n``): the headline
    metrics the pipeline's parent MLflow run carries. The first system the table lists for
    a published row stands for it (the findings pick same-budget pairs among all of them)."""
    out: dict[str, float] = {}
    for t in tables:
        for row_id, column, value in t.numbers:
            name = headline_name(t.id, row_id or "", column)
            if row_id is None or name in out:
                continue
            out[name] = value.value
            if value.n is not None:
                out[f"{name}/n"] = float(value.n)
    return out


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def corpus_table(stored: StoredCorpusStatistics) -> tuple[str, list[tuple[str, str]]]:
    stats = stored.output.stats
    rows = [(k, _fmt(v)) for k, v in sorted(stats.items()) if k not in ("top_words", "source")]
    top = ", ".join(f"{w} ({c})" for w, c in stats.get("top_words", [])[:10])
    rows.append(("top words", top))
    title = f"Corpus statistics: {stats['source']} (stage corpus_stats, key {stored.where.key})"
    return title, rows


def _seq2seq_context(cfg: ReportConfig, data: str) -> str:
    """Profile, seq2seq base model and data behind a Nugget table."""
    model = cfg.seq2seq
    base = seq2seq_base(model) + ("" if model.source == "pretrained" else " trained from scratch")
    return f"profile {cfg.profile}; base model: {base}; data: {data}"


def _context(cfg: ReportConfig, stage: str, where: Location | None, data: str) -> str:
    """A Nugget table's context and the artifact of ``stage`` that measured it (``where``
    it was read from; None: the stage is not in this run)."""
    return measured_by(_seq2seq_context(cfg, data), where, stage)


def _by_path(cfg: ReportConfig) -> Callable[[str], Any]:
    """``cfg``'s sections by config path, as `stages.report.deviations` reads them."""
    return {f.path: getattr(cfg, f.name) for f in section_fields(ReportConfig)}.__getitem__


def _where(stored: Stored[OutputT] | None) -> Location | None:
    return stored.where if stored is not None else None


def build_tables(cfg: ReportConfig, inputs: ReportInputs) -> list[ReportTable]:
    tables = _tables(cfg, inputs)
    rec, sim = _where(inputs.eval_reconstruction), _where(inputs.eval_similarity)
    analysis = _where(inputs.analyze_nuggets)
    links = {"nugget_fig4": examples(rec, ReconstructionResults.EXAMPLES),
             "nugget_fig5": examples(analysis, NuggetAnalysis.EXAMPLES),
             "nugget_appD": examples(analysis, NuggetAnalysis.EXAMPLES),
             "nugget_table2": examples(sim, SimilarityResults.EXAMPLES),
             "nugget_table4": examples(sim, SimilarityResults.EXAMPLES)}
    for t in tables:
        t.examples = t.examples or links.get(t.id, [])
    return tables


def _tables(cfg: ReportConfig, inputs: ReportInputs) -> list[ReportTable]:
    sim = inputs.eval_similarity.output
    rec = inputs.eval_reconstruction.output
    analysis = inputs.analyze_nuggets.output if inputs.analyze_nuggets else None
    data_sim = "; ".join(sorted({f"{r['task'].upper()}: {r['n_tasks']} tasks from {r['data']}" for r in sim.rows}))
    data_rec = (f"first {rec.rows[0]['n_docs']} {rec.split} documents of build_mt_docs, beam {rec.beam_size}"
                if rec.rows else f"build_mt_docs {cfg.eval.nugget_split} split")
    analysed = f"{cfg.eval.nugget_split} documents of build_mt_docs"
    lm = cfg.lm
    lm_ctx = f"profile {cfg.profile}; base LM: {lm.name_or_path or lm.source} (keep_layers={lm.keep_layers})"
    lengths = cfg.eval.autoencoding.lengths
    mt = cfg.mt
    mt_stand_in = "" if mt.source == "wmt19" else f"{mt.source} en-zh documents (stand-in for WMT19 en-zh)"
    languages = {"source": f"source language ({mt.src_lang})", "target": f"target language ({mt.tgt_lang})"}
    budgets, layer = training_budgets(cfg.train_nugget, cfg.sweep, cfg.train_baselines), cfg.nugget.scorer_layer
    sim_at, rec_at = _where(inputs.eval_similarity), _where(inputs.eval_reconstruction)
    analysis_at = _where(inputs.analyze_nuggets)
    return [
        bleu_table(rec, _context(cfg, "eval_reconstruction", rec_at, data_rec), mt_stand_in, layer, budgets),
        token_table(analysis, _context(cfg, "analyze_nuggets", analysis_at, analysed), mt_stand_in, layer, rec),
        multilingual_token_table(analysis,
                                 _context(cfg, "analyze_nuggets", analysis_at, f"{analysed}, each language's side"),
                                 languages, mt_stand_in, rec),
        table2(sim, _context(cfg, "eval_similarity", sim_at, data_sim or "PI / RR"), budgets, layer),
        eval_table("nugget_table3", "Nugget table 3: Nugget LM word-level perplexity with h history segments",
                   inputs.eval_nugget_lm,
                   {f"h={h}": f"ppl_h{h}" for h in sorted({0, *cfg.eval.nugget_lm.histories})},
                   _seq2seq_context(cfg, f"{cfg.eval.nugget_lm.split} articles of build_nugget_lm "
                                         "(out-of-vocabulary words excluded)")),
        table4(sim, _context(cfg, "eval_similarity", sim_at, data_sim or "PI / RR"), budgets, layer),
        eval_table("nugget2d_table1", "Nugget2D table 1: LM perplexity", inputs.eval_lm,
                       {"wikitext_subword": "wiki_subword_ppl", "wikitext_word": "wiki_word_ppl",
                        "pile_subword": "pile_subword_ppl"}, lm_ctx, kv_states),
        eval_table("nugget2d_table3", "Nugget2D table 3: QA accuracy", inputs.eval_qa,
                       {"accuracy": "accuracy"}, lm_ctx),
        eval_table("nugget2d_table4", "Nugget2D table 4: summarisation ROUGE", inputs.eval_summarization,
                       # the paper's RL read as ROUGE-Lsum, CNN/DailyMail's convention (stages/evaluation/rouge.py)
                       {"rouge1": "rouge1", "rouge2": "rouge2", "rougeL": "rougeLsum"},
                       f"{lm_ctx}; the rougeL column is ROUGE-Lsum (summary-level LCS over newline-split sentences, "
                       "CNN/DailyMail's ROUGE-L); eval_summarization's table also has ROUGE-L of the texts taken whole"),
        eval_table("nugget2d_autoencoding", "Nugget2D §4 (fig. 5): reconstruction BLEU by document length, "
                       "Nugget2D vs ICAE", inputs.eval_nugget2d_ae,
                       {"bleu": "bleu", **{f"L={n}": f"bleu_L{n}" for n in lengths},
                        **{f"states L={n}": f"states_L{n}" for n in lengths}}, lm_ctx),
        eval_table("nugget2d_tokens", "Nugget2D §4.3: which tokens become nuggets (% of nuggets / of tokens)",
                       inputs.eval_nugget2d_ae, {"share_nuggets": "share_nuggets",
                                                 "share_text": "share_text"}, lm_ctx),
        *re_tables(cfg, inputs.eval_re_restoration, inputs.eval_re_retrieval, inputs.eval_re_downstream),
        *efficiency_tables(inputs.eval_efficiency, f"{lm_ctx}; eval.dtype {cfg.eval.dtype}"),
    ]


def _examples(page: Page, paths: Sequence[Path], bundle: Bundle, measured: bool) -> None:
    """A table's line linking its per-example outputs ``paths`` (copied into the report
    folder, `Bundle.sample`); a table with ``measured`` numbers but none says so."""
    links = [(bundle.sample(p), f"{bundle.stage_of(p)}/{p.name}") for p in paths]
    if links:
        page.text("*Per-example outputs:* " + ", ".join(f"[{text}]({href})" for href, text in links),
                  "<p class='context'><i>Per-example outputs:</i> " + ", ".join(
                      f"<a href='{html.escape(href)}'>{html.escape(text)}</a>" for href, text in links) + "</p>")
    elif measured:
        page.text("*Per-example outputs:* none written by the measuring stage.")


def _figures(page: Page, figures: Sequence[Figure], bundle: Bundle) -> None:
    """The figures, copied into the report folder (markdown links them there, HTML carries PNGs inside)."""
    page.section("Figures")
    for number, f in enumerate(figures, 1):
        href = bundle.figure(f.path, f.stage)
        caption = f"Figure {number} ({f.stage}/{f.path.name}). {f.caption}"
        if f.path.suffix == ".png":
            page.raw([f"![{f.path.name}]({href})", "", f"*{caption}*", ""],
                     f"<figure><img src='{data_uri(bundle.base / href)}' alt='{html.escape(f.path.name)}'>"
                     f"<figcaption>{html.escape(caption)}</figcaption></figure>")
        else:
            page.raw([f"- [{f.path.name}]({href}): {caption}", ""],
                     f"<p><a href='{html.escape(href)}'>{html.escape(f.path.name)}</a>: {html.escape(caption)}</p>")


LEGEND = ("Measured values come from this pipeline run's artifacts; published values are the "
          "papers' (source under each title). Each measured number carries the n it stands on (examples, queries, "
          "documents or tokens) and, where the evaluation gave one, its 95% interval: ± 1.96 se for a mean over "
          "independent examples, [low, high] for a proportion of independent examples (Wilson) and for a corpus "
          "statistic (a BLEU, a perplexity, a share of tokens): the percentile bootstrap over the independent units "
          "each table's notes name (documents, articles, questions, sentences, ranking tasks; none from fewer than "
          f"{MIN_UNITS} units); a table's notes also give each column's competence floor (what a trivial reference reaches on "
          "the same examples). A title names the data that stood in for the paper's. "
          f"'{NOT_RUN}': no stage of this run measured the cell (the HTML page names such rows in one line per table). "
          f"'{FLAG_MARK}': the system is uninformative (constant or looping outputs, perplexity above a unigram "
          "model, 0 of n beside a baseline at 0; the table's notes say why): its number is no result. Every "
          f"measured cell is also in {RESULTS}, machine-readable.")


def render(title: str, tables: list[ReportTable], corpus: tuple[str, list[tuple[str, str]]] | None,
           figures: Sequence[Figure] = (), differences: Sequence[Deviation] = (),
           verdicts: Sequence[Verdict] = (), bundle: Bundle | None = None,
           training: Sequence[TrainingSummary] = (),
           evaluations: Sequence[EvaluationTable] = (), header: RunHeader | None = None) -> tuple[str, str]:
    """The report as markdown and HTML. Every file it links is copied into the report folder
    (``bundle``: per-example outputs, figures), so the folder travels whole; ``training``:
    the trained models' summaries; ``evaluations``: the collected evaluations' tables, after
    the papers'; ``header``: the run that produced it."""
    bundle = bundle or Bundle(Path.cwd(), {})
    page = Page(title)
    if header is not None:
        page.intro(header.markdown(), header.html())
    page.intro([LEGEND], f"<p class='meta'>{html.escape(LEGEND)}</p>")
    if verdicts:
        page.section("Findings at this scale")
        page.text("Each paper finding checked against this run's cells below (stages.report.findings, "
                  "stages.report.verdicts). The rules, applied in this order:")
        page.raw([*[f"- '{verdict}': {RULES[verdict]}." for verdict in RULE_ORDER], ""],
                 "<ul>" + "".join(f"<li><b>{html.escape(verdict)}</b>: {html.escape(RULES[verdict])}.</li>"
                                  for verdict in RULE_ORDER) + "</ul>")
        page.table(["finding", "paper", "verdict", "evidence (this run)"],
                   [(v.claim, v.source, v.verdict, v.evidence) for v in verdicts])
    if training:
        page.section(TRAINING_CAPTION)
        page.text(TRAINING_INTRO)
        page.table(TRAINING_HEADERS, training_rows(training))
    for t in tables:
        page.section(t.heading)
        page.text(f"*Source of published values:* {t.source}.",
                  f"<p class='context'><i>Source of published values:</i> {html.escape(t.source)}.</p>")
        page.text(f"*Measured:* {t.context}.", f"<p class='context'><i>Measured:</i> {html.escape(t.context)}.</p>")
        page.table(t.headers(), t.cells(), collapse=True)
        if t.notes():
            page.raw(["*Notes:*", "", *[f"- {n}" for n in t.notes()], ""],
                     "<p><i>Notes:</i></p><ul>" + "".join(f"<li>{html.escape(n)}</li>" for n in t.notes()) + "</ul>")
        _examples(page, t.examples, bundle, t.measured_count() > 0)
    for e in evaluations:  # the collected evaluations: each table with its legend, as it renders itself
        page.section(e.heading)
        page.text(f"*Source of published values:* {e.source}.",
                  f"<p class='context'><i>Source of published values:</i> {html.escape(e.source)}.</p>")
        page.text(f"*Measured:* {e.context}.", f"<p class='context'><i>Measured:</i> {html.escape(e.context)}.</p>")
        headers, rows = e.table.display()
        page.table(headers, rows)
        legend = e.table.legend()
        if legend:
            page.raw([*[f"- {line}" for line in legend], ""],
                     "<ul>" + "".join(f"<li>{html.escape(line)}</li>" for line in legend) + "</ul>")
        _examples(page, e.examples, bundle, bool(e.numbers()))
    if differences:
        page.section("Differences from the papers' setups")
        page.table(["setting", "paper", "this run (why)"], [(d.setting, d.paper, d.here) for d in differences])
    if corpus:
        page.section(corpus[0])
        page.table(["quantity", "value"], corpus[1])
    if figures:
        _figures(page, figures, bundle)
    return page.markdown(), page.html()


def _folders(inputs: ReportInputs) -> dict[Path, str]:
    """Each read input's artifact folder -> its stage (the report names its copies by stage)."""
    out: dict[Path, str] = {}
    for f in fields(inputs):
        value = getattr(inputs, f.name)
        for stored in (value.values() if isinstance(value, dict) else [value]):
            if isinstance(stored, Stored):
                out[stored.where.path] = stored.where.stage
    return out


def report_figures(inputs: ReportInputs, training: Sequence[TrainingSummary], folder: Path) -> list[Figure]:
    """The figures the report shows: the Nugget evaluations', calibrate_threshold's histogram,
    and those it draws into ``folder`` (`stages.report.figures`) from the inputs present."""
    with_figures: list[WithFigures] = [inputs.eval_reconstruction.output]
    if inputs.analyze_nuggets is not None:
        with_figures.append(inputs.analyze_nuggets.output)
    figures = []
    for output in with_figures:
        captions = output.captions()
        figures += [Figure(output.STAGE, path, captions.get(path.name, "")) for path in output.figures()]
    folder.mkdir(parents=True, exist_ok=True)
    if inputs.calibrate_threshold is not None and (hist := threshold_figure(inputs.calibrate_threshold)):
        figures.append(hist)
    if inputs.eval_nugget2d_ae is not None:
        figures.append(bleu_by_length(inputs.eval_nugget2d_ae.output, "eval_nugget2d_ae", folder / "nugget2d_bleu_by_length.png"))
    if inputs.eval_qa is not None:
        figures.append(quality_by_compression(inputs.eval_qa.output, "eval_qa", "accuracy", "QA accuracy (%)",
                                              folder / "nugget2d_qa_by_compression.png"))
    if inputs.eval_summarization is not None:
        figures.append(quality_by_compression(inputs.eval_summarization.output, "eval_summarization", "rougeLsum", "summary ROUGE-Lsum",
                                              folder / "nugget2d_summaries_by_compression.png"))
    if inputs.eval_efficiency is not None:
        figures.append(decode_cost_by_context(inputs.eval_efficiency.output, "eval_efficiency",
                                              folder / "nugget2d_decode_cost.png"))
    if training:
        figures.append(training_curves(training, folder / "training_curves.png"))
    return figures


class Report(Stage[ReportConfig, ReportInputs, None]):
    name = "report"
    parent_metrics = True  # its metrics (the headline numbers, the findings' counts) go to the parent run too
    parent_tables: ClassVar[tuple[str, ...]] = (RESULTS,)  # logged to the parent run as a table too

    def compute(self, ctx: StageContext, cfg: ReportConfig, inputs: ReportInputs) -> None:
        tables = build_tables(cfg, inputs)
        evaluations = evaluation_tables(cfg.profile, inputs.other_evaluations)
        problems = [p for t in tables for p in t.problems()] + [p for e in evaluations for p in e.problems()]
        if problems:  # never publish a number without the n it stands on
            raise ValueError("report: measured numbers without their n:\n  " + "\n  ".join(problems))
        training = training_summaries({stage: getattr(inputs, stage) for stage in TRAINING_STAGES})
        figures = report_figures(inputs, training, ctx.output_dir / FIGURES)
        corpus = corpus_table(inputs.corpus_stats)
        differences = deviations(_by_path(cfg))
        verdicts = judge(tables)
        worse = log_worse(training)
        header = RunHeader(cfg.profile, ctx.key, time.time(), ctx.producing_run())
        bundle = Bundle(ctx.output_dir, _folders(inputs))
        md, page = render(cfg.report.title, tables, corpus, figures, differences, verdicts, bundle, training,
                          evaluations, header)
        (ctx.output_dir / "report.md").write_text(md)
        (ctx.output_dir / "report.html").write_text(page)
        write_results(ctx.output_dir / RESULTS, cell_records(tables, evaluations, verdicts))
        (ctx.output_dir / "tables").mkdir()
        for t in tables:
            (ctx.output_dir / "tables" / f"{t.id}.csv").write_text(csv_text(t.headers(), t.cells()))
        for e in evaluations:
            (ctx.output_dir / "tables" / f"{e.stage}.csv").write_text(e.table.to_csv())
        ctx.log_artifacts(ctx.output_dir, "report")  # the whole folder: it opens from MLflow with nothing broken
        ctx.log_metrics({"tables": len(tables) + len(evaluations),
                         "measured_cells": sum(t.measured_count() for t in tables)
                         + sum(len(e.numbers()) for e in evaluations),
                         "trained_models": len(training), "trained_models_worse": len(worse),
                         "figures": len(figures),
                         "paper_differences": len(differences), **counts(verdicts), **headline_metrics(tables)})
        # a collected evaluation's numbers are metrics of its own stage's run and rows of
        # results.json (a table of the parent run); copying them here too filled the parent
        # run with hundreds of metrics
