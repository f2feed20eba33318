"""The papers' tables, filled from upstream artifacts: measured beside published.

Each `ReportTable` row has, per metric column, a measured value (a number read from an
evaluation stage's output, or the text `NOT_RUN`) and the published value of that cell
(`stages.report.published`, or `NOT_IN_PAPER` where the paper has none). Nothing is
ever blank, and a published number never fills a measured cell.

Every evaluation output is read through its contract (`stages.artifacts.evaluate`): the
Nugget evaluations' `SimilarityResults`, `ReconstructionResults`, `NuggetAnalysis`, and
the `EvalTable` of ``eval_nugget_lm`` and of the Nugget2D evaluations (``eval_lm``,
``eval_qa``, ``eval_summarization``, ``eval_nugget2d_ae``),
whose rows name the published row they reproduce (``paper_row``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from stages.artifacts.evaluate import (
    NOT_RUN,
    EvalTable,
    NuggetAnalysis,
    ReconstructionResults,
    SimilarityResults,
    TableRow,
)
from stages.common.intervals import share_se
from stages.common.tokens import display_token
from stages.framework.stage import Artifact
from stages.report.published import PUBLISHED, SOURCES, published

NOT_IN_PAPER = "not in paper"


def seq2seq_base(model: Any) -> str:
    """The encoder-decoder ``model.seq2seq`` names, as a table's context states it."""
    if model.source == "pretrained":
        return model.name_or_path
    return f"random-init tiny BART (d={model.tiny.d_model}, {model.tiny.layers}+{model.tiny.layers} layers)"


def measured_cell(value: Any, n: int | None, half_width: float | None = None) -> str:
    """A measured number as the report shows it: the value, its 95% interval where the
    evaluation gave a standard error, and the n it stands on."""
    if not isinstance(value, int | float) or isinstance(value, bool):
        return str(value)
    text = f"{value:.2f}" + (f" ± {half_width:.2f}" if half_width is not None and math.isfinite(half_width) else "")
    return f"{text} (n={n})" if n is not None else text


@dataclass(frozen=True)
class MeasuredValue:
    """A measured number of a report cell as the findings read it."""

    label: str  # the system's row label
    value: float
    n: int | None
    half_width: float | None  # of the 95% interval, where the evaluation gave a standard error

    def describe(self) -> str:
        return f"{self.label} {measured_cell(self.value, self.n, self.half_width)}"


@dataclass
class ReportTable:
    """One table of the papers: per row a label, the measured cells (numbers rendered with
    their n and, where known, a 95% interval), the published cells. ``stand_in`` names the
    data standing in for the paper's (shown in the title) when the run did not use it;
    ``examples`` links the per-example outputs behind the measured cells."""

    id: str
    title: str
    context: str  # profile, models and data behind the measured column
    columns: list[str]
    rows: list[tuple[str, dict[str, Any], dict[str, Any]]] = field(default_factory=list)  # label, measured, published
    stand_in: str = ""
    examples: list[Path] = field(default_factory=list)  # per-example output files of the measuring stage
    # (published row id or None, column, the number): what `values` serves the findings
    numbers: list[tuple[str | None, str, MeasuredValue]] = field(default_factory=list)
    # the published table (`PUBLISHED`, `SOURCES`) of its published column, when it is not ``id``: one paper
    # table shown as several report tables (RE table 8, one per sentence count)
    published_as: str = ""

    @property
    def paper_table(self) -> str:
        return self.published_as or self.id

    @property
    def source(self) -> str:
        return SOURCES.get(self.paper_table, "")

    @property
    def heading(self) -> str:
        return f"{self.title} [stand-in data: {self.stand_in}]" if self.stand_in else self.title

    def add(self, label: str, measured: dict[str, Any], row_id: str | None = None,
            n: dict[str, int | None] | int | None = None, se: dict[str, float] | None = None) -> None:
        """A row: ``measured`` per column (None: not run), ``n`` (per column, or one for
        the row) the examples / tasks / tokens behind each number, ``se`` standard errors
        (shown as the 95% interval, 1.96 se)."""
        pub = {c: published(self.paper_table, row_id, c) if row_id else None for c in self.columns}
        ns = n if isinstance(n, dict) else dict.fromkeys(self.columns, n)
        se = se or {}
        for c in self.columns:
            value = measured.get(c)
            if isinstance(value, int | float) and not isinstance(value, bool):
                half = 1.96 * se[c] if se.get(c) is not None else None
                self.numbers.append((row_id, c, MeasuredValue(label, float(value), ns.get(c), half)))
        self.rows.append((
            label,
            {c: NOT_RUN if measured.get(c) is None else
             measured_cell(measured[c], ns.get(c), 1.96 * se[c] if se.get(c) is not None else None)
             for c in self.columns},
            {c: NOT_IN_PAPER if pub[c] is None else pub[c] for c in self.columns},
        ))

    def headers(self) -> list[str]:
        return ["system"] + [f"{c} {kind}" for c in self.columns for kind in ("measured", "published")]

    def cells(self) -> list[list[Any]]:
        return [[label] + [v for c in self.columns for v in (m[c], p[c])] for label, m, p in self.rows]

    def measured_count(self) -> int:
        return sum(1 for _, m, _ in self.rows for v in m.values() if v != NOT_RUN)

    def values(self, row_id: str, column: str) -> list[MeasuredValue]:
        """The measured numbers of the rows reproducing published row ``row_id``, in table order."""
        return [v for r, c, v in self.numbers if r == row_id and c == column]

    def problems(self) -> list[str]:
        """Measured numbers shown without the n they stand on: a table the report refuses
        to publish (every number must say how many examples it is worth)."""
        return [f"{self.id}: {v.label} / {c} = {v.value:g} has no n" for _, c, v in self.numbers if v.n is None]


def _is_learned(r: dict[str, Any]) -> bool:
    return r.get("kind") == "nugget" and r.get("selector") == "topk" and r.get("feedback") and not r.get("baseline")


def _by_task(rows: list[dict[str, Any]], keep: Callable[[dict[str, Any]], bool]) -> dict[str, dict[str, float]]:
    """{system label: {task: mrr}} of the similarity rows ``keep`` accepts."""
    out: dict[str, dict[str, float]] = {}
    for r in rows:
        if keep(r):
            out.setdefault(r["label"], {})[r["task"]] = r["mrr"]
    return out


def _se(rows: list[dict[str, Any]], label: str) -> dict[str, float]:
    """Standard errors of system ``label``'s MRR per task (rows written before they were
    recorded have none)."""
    return {r["task"]: r["mrr_se"] for r in rows if r["label"] == label and r.get("mrr_se") is not None}


def _first(found: dict[str, dict[str, float]]) -> tuple[str, dict[str, float]]:
    """The first system of a `_by_task` result, or ("", {}) when none matched."""
    return next(iter(found.items()), ("", {}))


def _tasks_n(rows: list[dict[str, Any]]) -> dict[str, int]:
    """Queries behind each task's MRR (the same tasks for every system of a run)."""
    return {r["task"]: r["n_tasks"] for r in rows if "n_tasks" in r}


PAPER_SIMILARITY_DATA = {"pi": "parabank", "rr": "wikitext103"}


def similarity_stand_in(rows: list[dict[str, Any]]) -> str:
    """The PI / RR data of this run that is not the paper's (ParaBank, WikiText-103)."""
    used = {r["task"]: r.get("data", "") for r in rows}
    return "; ".join(f"{task.upper()}: {data}" for task, data in sorted(used.items())
                     if data and PAPER_SIMILARITY_DATA.get(task) not in data)


def _nugget_label(r: dict[str, Any]) -> str:
    return f"Nugget {r['objective'].upper()} r={r['ratio']:g} l={r['scorer_layer']} [{r['source']}]"


@dataclass
class _SimilarityTable(ReportTable):
    """PI / RR tables: every MRR stands on its task's queries."""

    task_n: dict[str, int] = field(default_factory=dict)

    def add(self, label: str, measured: dict[str, Any], row_id: str | None = None,
            n: dict[str, int | None] | int | None = None, se: dict[str, float] | None = None) -> None:
        super().add(label, measured, row_id, n if n is not None else dict(self.task_n), se)


def table2(sim: SimilarityResults | None, context: str) -> ReportTable:
    rows = sim.rows if sim else []
    t = _SimilarityTable("nugget_table2", "Nugget table 2: PI / RR (MRR x 100)", context, ["pi", "rr"],
                         stand_in=similarity_stand_in(rows), task_n=_tasks_n(rows))
    learned = [r for r in rows if _is_learned(r) and r["mode"] == "nugget"]
    shown: set[str] = set()
    for row_id in PUBLISHED["nugget_table2"]:
        if not row_id.startswith("nugget_"):
            continue
        _, objective, ratio = row_id.split("_")
        hits = _by_task(learned, lambda r, o=objective, x=float(ratio): r["objective"] == o and abs(r["ratio"] - x) < 1e-9)
        for label, values in hits.items() or [(f"Nugget {objective.upper()} r={ratio}", {})]:
            t.add(_nugget_label(next(r for r in learned if r["label"] == label)) if values else label, values, row_id,
                  se=_se(rows, label))
            shown.add(label)
    for label, values in _by_task(learned, lambda r: r["label"] not in shown).items():
        t.add(_nugget_label(next(r for r in learned if r["label"] == label)), values, se=_se(rows, label))
    for name, row_id in (("tsdae_ae", "tsdae_ae"), ("tsdae_mt", "tsdae_mt"), ("re_cross", None), ("re_gating", None)):
        system, values = _first(_by_task(rows, lambda r, n=name: r.get("baseline") == n))
        label = {"tsdae_ae": "TSDAE AE (60% deletion)", "tsdae_mt": "TSDAE MT",
                 "re_cross": "RE single vector, cross decoder (AE)", "re_gating": "RE single vector, gating decoder (AE)"}[name]
        t.add(label, values, row_id, se=_se(rows, system))
    t.add(f"ColBART (all encoder states of {sim.colbart_from if sim else '-'})",
          _by_task(rows, lambda r: r["mode"] == "colbart").get("ColBART", {}), "colbart", se=_se(rows, "ColBART"))
    return t


def table4(sim: SimilarityResults | None, context: str) -> ReportTable:
    rows = sim.rows if sim else []
    t = _SimilarityTable("nugget_table4", "Nugget table 4: ablations (MT, MRR x 100)", context, ["pi", "rr"],
                         stand_in=similarity_stand_in(rows), task_n=_tasks_n(rows))
    mt01 = [r for r in rows if _is_learned(r) and r["mode"] == "nugget" and r["objective"] == "mt" and abs(r["ratio"] - 0.1) < 1e-9]
    layers = sorted({r["scorer_layer"] for r in mt01} | {0, 3, 6, 9})
    for layer in layers:
        hits = _by_task(mt01, lambda r, x=layer: r["scorer_layer"] == x)
        row_id = f"l={layer}" if f"l={layer}" in PUBLISHED["nugget_table4"] else None
        if not hits:
            t.add(f"Nugget MT r=0.1 (l = {layer})", {}, row_id)
        for label, values in hits.items():
            t.add(f"Nugget MT r=0.1 (l = {layer}) [{label}]", values, row_id, se=_se(rows, label))
    for r in rows:
        if r.get("baseline") == "nugget_mt" and r["task"] == "pi":
            row_id = f"l={r['scorer_layer']}" if f"l={r['scorer_layer']}" in PUBLISHED["nugget_table4"] else None
            t.add(f"Nugget MT r={r['ratio']:g} (l = {r['scorer_layer']}), learned selector: the ablations' reference",
                  _by_task(rows, lambda x: x.get("baseline") == "nugget_mt")[r["label"]], row_id,
                  se=_se(rows, r["label"]))
    for name, label in (("no_feedback", "No feedback"), ("chunk", "Chunking"),
                        ("nugget_r0033", "Nugget (r = 0.033)"), ("sentence", "Sentence boundary")):
        system, values = _first(_by_task(rows, lambda r, n=name: r.get("baseline") == n))
        t.add(label, values, name, se=_se(rows, system))
    return t


def bleu_table(rec: ReconstructionResults | None, context: str, stand_in: str = "") -> ReportTable:
    t = ReportTable("nugget_fig4", "Nugget figure 4: BLEU of texts decoded from nuggets vs ratio r", context, ["bleu"],
                    stand_in=stand_in)
    rows = sorted(rec.rows if rec else [], key=lambda r: (r["kind"], r["objective"], r.get("scorer_layer") or 0, r.get("ratio") or 0))
    for r in rows:
        row_id = "ae_r>=0.1" if r["kind"] == "nugget" and r["objective"] == "ae" and r["ratio"] >= 0.1 else None
        t.add(r["label"], {"bleu": r["bleu"]}, row_id, n=r.get("n_docs"))
    if not rows:
        t.add("Nugget AE / MT", {}, "ae_r>=0.1")
    return t


def _share_row(t: ReportTable, label: str, shares: dict[str, float], n: dict[str, int | None],
               row_id: str | None = None) -> None:
    """A row of token shares (%) with their n and binomial 95% intervals."""
    t.add(label, shares, row_id, n=n, se={c: share_se(v, n.get(c)) for c, v in shares.items()})


def token_table(analysis: NuggetAnalysis | None, context: str, stand_in: str = "") -> ReportTable:
    """Nugget fig. 5 in numbers: shares (%) of 'the' and of punctuation among nuggets vs in
    text (n: the nuggets / the tokens counted)."""
    t = ReportTable("nugget_fig5", "Nugget figure 5: what becomes a nugget (% of tokens)", context,
                    ["share_nuggets", "share_text"], stand_in=stand_in)
    freq = analysis.token_frequency if analysis else {}
    for stats in freq.values():
        if stats.get("encoder_side", "source") != "source":
            continue  # another language: `multilingual_token_table`
        n = {"share_nuggets": stats.get("n_nuggets"), "share_text": stats.get("n_tokens")}
        _share_row(t, f"'the' ({stats['label']})", {"share_nuggets": stats["the_share_nuggets"],
                                                    "share_text": stats["the_share_text"]}, n,
                   "the_ae" if stats["objective"] == "ae" else None)
        _share_row(t, f"punctuation ({stats['label']})", {"share_nuggets": stats["punctuation_share_nuggets"],
                                                          "share_text": stats["punctuation_share_text"]}, n)
        for token, nug, text in stats["top"][:3]:
            _share_row(t, f"{display_token(token)!r} ({stats['label']}, top nugget token)",
                       {"share_nuggets": nug, "share_text": text}, n)
    if not freq:
        t.add("'the' (AE)", {}, "the_ae")
    return t


def multilingual_token_table(analysis: NuggetAnalysis | None, context: str, languages: dict[str, str],
                             stand_in: str = "") -> ReportTable:
    """Nugget appendix D (fig. 12) in numbers: per language of the corpus (``languages``:
    encoder side -> name) and objective, the punctuation share and the top nugget tokens
    among nuggets vs in text. The paper gives no numbers for it."""
    t = ReportTable("nugget_appD", "Nugget appendix D: nugget tokens by language (% of tokens)", context,
                    ["share_nuggets", "share_text"], stand_in=stand_in)
    freq = analysis.token_frequency if analysis else {}
    for stats in sorted(freq.values(), key=lambda x: (x.get("encoder_side", "source"), x["objective"])):
        language = languages[stats.get("encoder_side", "source")]
        n = {"share_nuggets": stats.get("n_nuggets"), "share_text": stats.get("n_tokens")}
        what = f"{language}, {stats['objective'].upper()} r={stats['ratio']:g}"
        _share_row(t, f"punctuation ({what})", {"share_nuggets": stats["punctuation_share_nuggets"],
                                                 "share_text": stats["punctuation_share_text"]}, n)
        for token, nug, text in stats["top"][:3]:
            _share_row(t, f"{display_token(token)!r} ({what}, top nugget token)",
                       {"share_nuggets": nug, "share_text": text}, n)
    if not any(s.get("encoder_side") == "target" for s in freq.values()):
        t.add(f"{languages['target']} (train_baselines: nugget_ae_tgtlang / nugget_mt_tgtlang)", {})
    return t


def add_eval_row(t: ReportTable, label: str, row: TableRow, columns: dict[str, str], row_id: str | None,
                 unmeasurable: dict[str, str] | None = None) -> None:
    """``row`` of an evaluation's `EvalTable` as a row of ``t``: ``columns`` maps each report
    column to the evaluation's metric key; a row with no number and a note says why it did not
    run in every cell; ``unmeasurable`` (column -> why) are cells this setup cannot measure,
    shown as such whatever the row holds; a metric "n_<key>" is the n of <key> where it
    differs from the row's."""
    measured: dict[str, Any] = {c: row.metrics.get(key) for c, key in columns.items()}
    if all(v is None for v in measured.values()) and row.note:
        measured = dict.fromkeys(columns, row.note if row.note.startswith(NOT_RUN) else f"not run: {row.note}")
    measured |= unmeasurable or {}
    t.add(label, measured, row_id, n={c: row.metrics.get(f"n_{key}", row.n) for c, key in columns.items()},
          se={c: row.stderr[key] for c, key in columns.items() if key in row.stderr})


def eval_table(table_id: str, title: str, art: Artifact | None, columns: dict[str, str],
               context: str) -> ReportTable:
    """A paper's table from an ``eval_*`` stage's `EvalTable` (Nugget table 3, the Nugget2D
    tables): every system of the table beside the published row its stage says it
    reproduces (``paper_row``); ``columns`` maps each
    column of the published table to the metric key of the evaluation's table; a row that
    measures none of them belongs to another table of the same stage and is left out.
    Published rows no system measured are kept with `NOT_RUN` (the whole table when the
    stage is not part of this run)."""
    t = ReportTable(table_id, title, context, list(columns))
    matched: set[str] = set()
    if art is not None:
        t.context = f"{context}; measured by stage {art.stage} (key {art.key})"
        table = EvalTable.read(art, art.stage)
        t.stand_in = table.stand_in
        t.examples = [p for p in (art.path / EvalTable.EXAMPLES,) if p.is_file()]
        for row in table.rows:
            if all(row.metrics.get(key) is None for key in columns.values()) and row.metrics:
                continue  # a row of the stage's other table (it measures other columns)
            row_id = row.paper_row if row.paper_row in PUBLISHED[table_id] else None
            matched.add(row_id or "")
            add_eval_row(t, row.system, row, columns, row_id)
    for row_id in PUBLISHED[table_id]:
        if row_id not in matched:
            t.add(row_id, {}, row_id)
    return t
