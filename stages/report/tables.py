"""The papers' tables, filled from upstream artifacts: measured beside published.

Each `ReportTable` row has, per metric column, a measured value (a number read from an
evaluation stage's output, or the text `NOT_RUN`) and the published value of that cell
(`stages.report.published`, or `NOT_IN_PAPER` where the paper has none). Nothing is
ever blank, and a published number never fills a measured cell.

Every evaluation output is read through its contract (`stages.artifacts.evaluate`): the
Nugget evaluations' `ReconstructionResults`, `NuggetAnalysis` (`SimilarityResults`: Nugget
tables 2 / 4, `stages.report.similarity_tables`), and
the `EvalTable` of ``eval_nugget_lm`` and of the Nugget2D evaluations (``eval_lm``,
``eval_qa``, ``eval_summarization``, ``eval_nugget2d_ae``),
whose rows name the published row they reproduce (``paper_row``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from stages.artifacts.base import Location
from stages.artifacts.evaluate import NOT_RUN, EvalTable, StoredEvalTable, TableRow
from stages.common.degenerate import LABEL
from stages.common.floors import Floor
from stages.common.intervals import Z95
from stages.common.resampling import UnitSample, plural
from stages.report.published import PUBLISHED, SOURCES, published

if TYPE_CHECKING:
    from stages.config.schema import Seq2SeqModel

NOT_IN_PAPER = "not in paper"
FLAG_MARK = f"[{LABEL}]"  # beside a number measured on an uninformative system; the table's notes say why


def seq2seq_base(model: Seq2SeqModel) -> str:
    """The encoder-decoder ``model.seq2seq`` names, as a table's context states it."""
    if model.source == "pretrained":
        return model.name_or_path
    return f"random-init tiny BART (d={model.tiny.d_model}, {model.tiny.layers}+{model.tiny.layers} layers)"


def measured_cell(value: Any, n: int | None, half_width: float | None = None,
                  bounds: tuple[float, float] | None = None, flag: str = "") -> str:
    """A measured number as the report shows it: the value, its 95% interval (``bounds``:
    an asymmetric one, e.g. Wilson's of a proportion, as [low, high]; else ± ``half_width``
    where the evaluation gave a standard error), the n it stands on, and `FLAG_MARK` when the
    system is uninformative (``flag``: why, `stages.common.degenerate`)."""
    if not isinstance(value, int | float) or isinstance(value, bool):
        return str(value)
    if bounds is not None:
        text = f"{value:.2f} [{bounds[0]:.2f}, {bounds[1]:.2f}]"
    else:
        text = f"{value:.2f}" + (f" ± {half_width:.2f}" if half_width is not None and math.isfinite(half_width) else "")
    text = f"{text} (n={n})" if n is not None else text
    return f"{text} {FLAG_MARK}" if flag else text


@dataclass(frozen=True)
class MeasuredValue:
    """A measured number of a report cell as the findings read it."""

    label: str  # the system's row label
    value: float
    n: int | None
    half_width: float | None  # of the 95% interval, where the evaluation gave a standard error
    column: str = ""
    # what bounded the training of the system measured (`stages.report.budgets`): a finding compares two
    # values of equal budget only; "" where the table's systems share one (or none was trained here)
    budget: str = ""
    bounds: tuple[float, float] | None = None  # an asymmetric 95% interval (a proportion's Wilson interval)
    flag: str = ""  # why the system is uninformative (`stages.common.degenerate`); "" = it is not
    # the per-unit statistics behind the value (`stages.common.resampling`): a finding's paired difference
    units: UnitSample | None = None
    floor: Floor | None = None  # the metric's competence floor on the same examples (`stages.common.floors`)
    ignores_input: str = ""  # why the system ignores its input ("" = it does not, or it has none)
    # why the system does not do the task it was trained for, judged on another number than this value
    # ("" = it does, or that is unknown): Nugget fig. 5's shares of a model whose reconstruction BLEU is
    # not beyond its floor (what a model selects as nuggets says nothing where it does not reconstruct)
    task_floor: str = ""

    @property
    def below_floor(self) -> str:
        """Why the system does not do the task ("" = it does, or no floor is known): it ignores its
        input, it does not do the task it was trained for (`task_floor`), or its value is not beyond
        the floor."""
        if self.ignores_input:
            return self.ignores_input
        if self.task_floor:
            return self.task_floor
        if self.floor is not None and not self.floor.reached_by(self.value):
            return f"{self.value:.4g} not beyond the floor {self.floor.describe()}"
        return ""

    @property
    def unit(self) -> str:
        """What the value's interval resamples ("" where it is none, or a Wilson interval over examples)."""
        return self.units.unit if self.units is not None else ""

    @property
    def low(self) -> float | None:
        """The 95% interval's lower end (None: no interval)."""
        if self.bounds is not None:
            return self.bounds[0]
        return None if self.half_width is None else self.value - self.half_width

    @property
    def high(self) -> float | None:
        """The 95% interval's upper end (None: no interval)."""
        if self.bounds is not None:
            return self.bounds[1]
        return None if self.half_width is None else self.value + self.half_width

    def describe(self, with_column: bool = False) -> str:
        """The value with its system's label (and its column: two cells of one row)."""
        label = f"{self.label} [{self.column}]" if with_column else self.label
        text = f"{label} {measured_cell(self.value, self.n, self.half_width, self.bounds, self.flag)}"
        if self.units is None:
            return text
        if self.n == self.units.n:  # the n is the units resampled: say what they are
            return text.replace(f"(n={self.n})", f"(n={self.n} {plural(self.units.unit)})", 1)
        return f"{text} ({self.units.n} {plural(self.units.unit)} resampled)"


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
    # (another id, column, the number): ids a finding also addresses a measured row by, no published row
    # (fig. 4's AE models at the lowest / highest ratio of their budget, `bleu_table`)
    aliases: list[tuple[str, str, MeasuredValue]] = field(default_factory=list)
    # the published table (`PUBLISHED`, `SOURCES`) of its published column, when it is not ``id``: one paper
    # table shown as several report tables (RE table 8, one per sentence count)
    published_as: str = ""
    # no paper table has these numbers (the claim they test is in the papers' words): measured columns
    # only, and ``no_paper_table`` says why in the source line
    no_paper_table: str = ""
    extra_notes: list[str] = field(default_factory=list)  # the measuring stage's own notes (how it measured)

    @property
    def paper_table(self) -> str:
        return self.published_as or self.id

    @property
    def source(self) -> str:
        return f"none: {self.no_paper_table}" if self.no_paper_table else SOURCES.get(self.paper_table, "")

    @property
    def heading(self) -> str:
        return f"{self.title} [stand-in data: {self.stand_in}]" if self.stand_in else self.title

    def add(self, label: str, measured: dict[str, Any], row_id: str | None = None,
            n: dict[str, int | None] | int | None = None, se: dict[str, float] | None = None,
            budget: str = "", bounds: dict[str, tuple[float, float] | None] | None = None, flag: str = "",
            also: tuple[str, ...] = (), units: dict[str, UnitSample] | None = None,
            floors: dict[str, Floor] | None = None, ignores_input: str = "", task_floor: str = "") -> None:
        """A row: ``measured`` per column (None: not run), ``n`` (per column, or one for
        the row) the examples / tasks / tokens behind each number, ``se`` standard errors
        (shown as the 95% interval, 1.96 se), ``bounds`` asymmetric 95% intervals (a proportion's
        Wilson interval, a corpus BLEU's or a perplexity's bootstrap one; they take the place of ``se``),
        ``budget`` the training budget of the system (`MeasuredValue.budget`), ``flag`` why the system is
        uninformative ("": it is not; shown beside its numbers and in the table's notes), ``also`` further
        ids the findings address the row by (`aliases`), ``units`` per column the per-unit statistics behind
        the value (what a finding's paired comparison resamples), ``floors`` per column the competence floor
        on the same examples, ``ignores_input`` why the system ignores its input ("" = it does not),
        ``task_floor`` why it does not do the task it was trained for, judged on another number
        (`MeasuredValue.task_floor`; "" = it does)."""
        pub = {c: published(self.paper_table, row_id, c) if row_id else None for c in self.columns}
        ns = n if isinstance(n, dict) else dict.fromkeys(self.columns, n)
        se, bounds, units, floors = se or {}, bounds or {}, units or {}, floors or {}
        cells: dict[str, Any] = {}
        for c in self.columns:
            value = measured.get(c)
            half = Z95 * se[c] if se.get(c) is not None and bounds.get(c) is None else None
            if isinstance(value, int | float) and not isinstance(value, bool):
                number = MeasuredValue(label, float(value), ns.get(c), half, c, budget, bounds.get(c), flag,
                                       units.get(c), floors.get(c), ignores_input, task_floor)
                self.numbers.append((row_id, c, number))
                self.aliases += [(alias, c, number) for alias in also]
            cells[c] = NOT_RUN if value is None else measured_cell(value, ns.get(c), half, bounds.get(c), flag)
        self.rows.append((label, cells, {c: NOT_IN_PAPER if pub[c] is None else pub[c] for c in self.columns}))

    def notes(self) -> list[str]:
        """The table's notes: per reason a system was flagged uninformative, the rows it flags; per
        column, what its intervals resample and its competence floor; the systems that ignore their input."""
        rows: dict[str, dict[str, None]] = {}
        units: dict[str, dict[str, None]] = {}
        floors: dict[str, dict[str, None]] = {}
        ignoring: dict[str, str] = {}
        failing: dict[str, str] = {}
        for _, c, v in self.numbers:
            if v.flag:
                rows.setdefault(v.flag, {})[v.label] = None
            if v.unit:
                units.setdefault(c, {})[v.unit] = None
            if v.floor is not None:
                floors.setdefault(c, {})[v.floor.describe()] = None
            if v.ignores_input:
                ignoring[v.label] = v.ignores_input
            if v.task_floor:
                failing[v.label] = v.task_floor
        return ([f"{FLAG_MARK} {', '.join(labels)}: {reason}" for reason, labels in rows.items()]
                + [f"{c}: intervals and comparisons resample {' / '.join(plural(u) for u in kinds)}"
                   for c, kinds in units.items()]
                + [f"{c}: competence floor {'; '.join(f)}: a system not beyond it does not do the task"
                   for c, f in floors.items()]
                + [f"{label} {reason}: below every floor" for label, reason in ignoring.items()]
                + [f"{label}: {reason}: below its task's floor" for label, reason in failing.items()]
                + self.extra_notes)

    def headers(self) -> list[str]:
        if self.no_paper_table:
            return ["system", *self.columns]
        return ["system"] + [f"{c} {kind}" for c in self.columns for kind in ("measured", "published")]

    def cells(self) -> list[list[Any]]:
        if self.no_paper_table:
            return [[label] + [m[c] for c in self.columns] for label, m, _ in self.rows]
        return [[label] + [v for c in self.columns for v in (m[c], p[c])] for label, m, p in self.rows]

    def measured_count(self) -> int:
        return sum(1 for _, m, _ in self.rows for v in m.values() if v != NOT_RUN)

    def values(self, row_id: str, column: str) -> list[MeasuredValue]:
        """The measured numbers of the rows reproducing published row ``row_id`` (or addressed by it,
        `aliases`), in table order."""
        return [v for r, c, v in (*self.numbers, *self.aliases) if r == row_id and c == column]

    def problems(self) -> list[str]:
        """Measured numbers shown without the n they stand on: a table the report refuses
        to publish (every number must say how many examples it is worth)."""
        return [f"{self.id}: {v.label} / {c} = {v.value:g} has no n" for _, c, v in self.numbers if v.n is None]


# Nugget §3.3 / §7.1: "By default NUGGET uses the features of layer 3": the layer every published Nugget row
# describes but table 4's l = 0 / 6 / 9. A run's default layer is ``nugget.scorer_layer``; the report sets it
# beside these rows (and the differences section names it when it is not 3).
PAPER_SCORER_LAYER = 3


def same_ratio(a: float | None, b: float) -> bool:
    """Whether a recorded ratio ``a`` (None: not recorded) is ``b``."""
    return a is not None and abs(a - b) < 1e-9


# fig. 4's trend (BLEU rises with r): per training budget, the AE models of its lowest and of its highest ratio
# (the Nugget figures' tables: `stages.report.nugget_tables`)
LOWEST_RATIO_AE, HIGHEST_RATIO_AE = "ae_lowest_r", "ae_highest_r"


def measured_by(context: str, where: Location | None, stage: str = "") -> str:
    """``context`` and the artifact that measured a table (``where`` it was read from), or
    that ``stage`` is absent from this run."""
    return f"{context}; measured by " + (f"stage {where.stage} (key {where.key})" if where else f"stage {stage} absent")


def examples(where: Location | None, name: str) -> list[Path]:
    """The per-example output ``name`` of the artifact read from ``where``, when it wrote one."""
    return [where.path / name] if where is not None and (where.path / name).is_file() else []


def metric_n(row: TableRow, key: str) -> int | None:
    """The n of ``row``'s metric ``key``: its "n_<key>" metric where the evaluation gave one
    (a count, held with the row's metrics as a number), else the row's."""
    if f"n_{key}" not in row.metrics:
        return row.n
    own = row.metrics[f"n_{key}"]
    return None if own is None else int(own)


def add_eval_row(t: ReportTable, label: str, row: TableRow, columns: dict[str, str], row_id: str | None,
                 unmeasurable: dict[str, str] | None = None, floors: dict[str, Floor] | None = None,
                 also: tuple[str, ...] = ()) -> None:
    """``row`` of an evaluation's `EvalTable` as a row of ``t``: ``columns`` maps each report
    column to the evaluation's metric key; a row with no number and a note says why it did not
    run in every cell; ``unmeasurable`` (column -> why) are cells this setup cannot measure,
    shown as such whatever the row holds; a metric "n_<key>" is the n of <key> where it
    differs from the row's; ``floors`` the evaluation's competence floors by metric key
    (`EvalTable.floors`); ``also`` further ids the findings address the row by (`ReportTable.add`)."""
    measured: dict[str, Any] = {c: row.metrics.get(key) for c, key in columns.items()}
    if all(v is None for v in measured.values()) and row.note:
        measured = dict.fromkeys(columns, row.note if row.note.startswith(NOT_RUN) else f"not run: {row.note}")
    measured |= unmeasurable or {}
    t.add(label, measured, row_id, n={c: metric_n(row, key) for c, key in columns.items()},
          se={c: row.stderr[key] for c, key in columns.items() if key in row.stderr},
          bounds={c: row.interval[key] for c, key in columns.items() if key in row.interval}, flag=row.flag,
          units={c: row.units[key] for c, key in columns.items() if key in row.units},
          floors={c: (floors or {})[key] for c, key in columns.items() if key in (floors or {})},
          ignores_input=row.ignores_input, also=also)


def eval_table(table_id: str, title: str, stored: StoredEvalTable | None, columns: dict[str, str],
               context: str, budget_of: Callable[[str], str | None] | None = None) -> ReportTable:
    """A paper's table from an ``eval_*`` stage's `EvalTable` (Nugget table 3, the Nugget2D
    tables): every system of the table beside the published row its stage says it
    reproduces (``paper_row``); ``columns`` maps each
    column of the published table to the metric key of the evaluation's table; a row that
    measures none of them belongs to another table of the same stage and is left out.
    Published rows no system measured are kept with `NOT_RUN` (the whole table when the
    stage is not part of this run). ``budget_of`` (a row id -> the budget it is measured at,
    e.g. Nugget2D table 1's KV states): the table says which budgets were measured, which
    are published and which the two share, and a row of a budget the paper has not says so."""
    t = ReportTable(table_id, title, context, list(columns))
    matched: set[str] = set()
    measured_at: set[str] = set()
    if stored is not None:
        t.context = measured_by(context, stored.where)
        table = stored.output
        t.stand_in = table.stand_in
        t.examples = examples(stored.where, EvalTable.EXAMPLES)
        for row in table.rows:
            if all(row.metrics.get(key) is None for key in columns.values()) and row.metrics:
                continue  # a row of the stage's other table (it measures other columns)
            row_id = row.paper_row if row.paper_row in PUBLISHED[table_id] else None
            matched.add(row_id or "")
            budget = budget_of(row.paper_row) if budget_of else None
            measured_at |= {budget} if budget else set()
            label = row.system if row_id or not budget else f"{row.system} (the paper has no row at {budget})"
            add_eval_row(t, label, row, columns, row_id, floors=table.floors)
    published_at = {b for r in PUBLISHED[table_id] if budget_of and (b := budget_of(r))}
    if budget_of:
        shared = sorted(measured_at & published_at, key=_natural)
        t.context += (f"; budgets measured: {', '.join(sorted(measured_at, key=_natural)) or 'none'}, published: "
                      f"{', '.join(sorted(published_at, key=_natural))}; comparable (measured beside published): "
                      + (", ".join(shared) if shared else "none: no measured row sits beside a published one"))
    for row_id in PUBLISHED[table_id]:
        if row_id not in matched:
            budget = budget_of(row_id) if budget_of else None
            elsewhere = budget and measured_at and budget not in measured_at
            why = f"not run at {budget} (this run measured {', '.join(sorted(measured_at, key=_natural))})"
            t.add(row_id, dict.fromkeys(columns, why) if elsewhere else {}, row_id)
    return t


def _natural(text: str) -> tuple[int, str]:
    """Budgets in numeric order ("64 states" before "128 states")."""
    head = text.split()[0]
    return (int(head), text) if head.isdigit() else (0, text)


def kv_states(row_id: str) -> str | None:
    """The KV budget of a Nugget2D table 1 row id ``<system>_<total states>``."""
    tail = row_id.rsplit("_", 1)[-1]
    return f"{tail} states" if tail.isdigit() else None
