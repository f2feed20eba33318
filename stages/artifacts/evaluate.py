"""The evaluation table every study's evaluation stages write (shared, so the report and
other studies read any of them through one type).

- `EvalTable`: the system x metric table of an evaluation (e.g. ``eval_lm``, ``eval_qa``,
  ``eval_summarization``, ``eval_re_retrieval``): per row the system's id, the published row
  it reproduces (if any), n, the metrics, their standard errors (means) or 95% intervals
  (proportions: Wilson, `stages.common.intervals`) where the stage has them, a note (e.g. why
  a system did not run) and the reason the system is uninformative
  (`stages.common.degenerate`; "": it is not). Written as ``table.md``, ``table.csv``,
  ``table.json``; ``table.json`` is what `read` reads. `StoredEvalTable`: one read with
  where it came from.
- The Nugget evaluations' own records and figures (`SimilarityResults`,
  `ReconstructionResults`, `NuggetAnalysis`) are the Nugget study's types,
  `stages.nugget.artifacts.results`.

Rendering (markdown, HTML, CSV) is `stages.common.render`'s, the one rendering module; the
report shows a table no paper table names as `EvalTable.to_markdown` / `to_html` render it.
"""

from __future__ import annotations

import html
import math
import re
from dataclasses import dataclass
from dataclasses import field as dc_field
from pathlib import Path
from typing import Any, ClassVar

from stages.artifacts.base import Source, Stored, field, locate, write_json
from stages.common.degenerate import LABEL
from stages.common.floors import Floor
from stages.common.render import csv_text, html_table, markdown
from stages.common.resampling import MIN_UNITS, UnitSample, plural

NOT_RUN = "not run in this profile"  # a measured cell no stage of this run filled


_METRIC_CHARS = re.compile(r"[^A-Za-z0-9_\-. :/]")


def metric_name(name: str) -> str:
    """``name`` with every character MLflow refuses in a metric name escaped as ``_x<hex>_``."""
    return _METRIC_CHARS.sub(lambda m: f"_x{ord(m.group(0)):x}_", name)


@dataclass(frozen=True)
class Column:
    key: str
    header: str
    fmt: str = "{:.2f}"


@dataclass(frozen=True)
class TableRow:
    system: str  # the id the evaluation gives the system; unique within its table
    metrics: dict[str, float | None] = dc_field(default_factory=dict)
    n: int | None = None  # examples / segments behind the row
    stderr: dict[str, float] = dc_field(default_factory=dict)  # standard error of a metric's mean
    note: str = ""  # e.g. the reason a system did not run
    paper_row: str = ""  # the row id of the published table this system reproduces ("" if none)
    # 95% interval (low, high) of a metric that is no mean of per-example values (`stages.common.intervals`):
    # a proportion's Wilson interval, a corpus BLEU's or a perplexity's bootstrap one; shown instead of 1.96 stderr
    interval: dict[str, tuple[float, float]] = dc_field(default_factory=dict)
    flag: str = ""  # why the system is uninformative (`stages.common.degenerate`); "" = it is not
    # per metric, the per-unit sufficient statistics behind it (`stages.common.resampling`): what the report
    # resamples for the metric's interval and for a paired comparison with another system on the same units
    units: dict[str, UnitSample] = dc_field(default_factory=dict)
    # why the system is below every competence floor whatever its numbers: it ignores its input
    # (`stages.artifacts.trainer_state.InputUse`); "" = it uses it, or it has none / it was not measured
    ignores_input: str = ""


def _intervals(where: Any, f: str, r: dict[str, Any]) -> dict[str, tuple[float, float]]:
    """A row's ``interval`` ({metric: [low, high]}) checked."""
    raw = field(where, f, r, "interval", dict, default={})
    for k, v in raw.items():
        if not (isinstance(v, list) and len(v) == 2 and all(isinstance(x, int | float) for x in v)):
            raise where.error(f, f"is malformed: interval {k!r} of system {r.get('system')!r} is {v!r}", "rows")
    return {k: (float(v[0]), float(v[1])) for k, v in raw.items()}


def _units(where: Any, f: str, r: dict[str, Any]) -> dict[str, UnitSample]:
    """A row's ``units`` ({metric: `UnitSample`}) checked."""
    out = {}
    for k, v in field(where, f, r, "units", dict, default={}).items():
        try:
            out[k] = UnitSample.from_json(v)
        except (ValueError, TypeError) as e:
            raise where.error(f, f"is malformed: units {k!r} of system {r.get('system')!r}: {e}", "rows") from e
    return out


def _floors(where: Any, f: str, raw: dict[str, Any]) -> dict[str, Floor]:
    """A table's ``floors`` ({metric: `Floor`}) checked."""
    out = {}
    for k, v in field(where, f, raw, "floors", dict, default={}).items():
        try:
            out[k] = Floor.from_json(v)
        except (ValueError, TypeError) as e:
            raise where.error(f, f"is malformed: floor {k!r}: {e}", "floors") from e
    return out


def _finite(value: Any) -> Any:
    """JSON has no NaN: an undefined value (e.g. no whole word scored) becomes null."""
    return None if isinstance(value, float) and not math.isfinite(value) else value


@dataclass(frozen=True)
class EvalTable:
    STAGE: ClassVar[str] = "evaluation"
    FILE: ClassVar[str] = "table.json"
    FILES: ClassVar[tuple[str, ...]] = ("table.md", "table.csv", "table.json")
    EXAMPLES: ClassVar[str] = "examples.jsonl"  # per system and example, beside the table (`publish`)
    title: str
    columns: list[Column]
    rows: list[TableRow]
    notes: list[str] = dc_field(default_factory=list)
    stand_in: str = ""  # the data standing in for the paper's ("" = the paper's own), shown in the report
    # per metric, its competence floor on this table's examples (`stages.common.floors`): what a trivial
    # reference reaches; a system not beyond it does not do the task
    floors: dict[str, Floor] = dc_field(default_factory=dict)

    # -- rendering -----------------------------------------------------------------
    def _cell(self, row: TableRow, col: Column) -> str:
        value = row.metrics.get(col.key)
        if value is None:
            return ""
        if isinstance(value, float) and math.isnan(value):
            return "nan"
        text = col.fmt.format(value)
        if col.key in row.interval:
            low, high = row.interval[col.key]
            return f"{text} [{col.fmt.format(low)}, {col.fmt.format(high)}]"
        se = row.stderr.get(col.key)
        return f"{text} ± {col.fmt.format(se)}" if se is not None and math.isfinite(se) else text

    def display(self) -> tuple[list[str], list[list[str]]]:
        """Headers and rows as the table is shown (markdown, HTML)."""
        headers = ["system", "n", *[c.header for c in self.columns], "note"]
        rows = [[r.system, "" if r.n is None else str(r.n), *[self._cell(r, c) for c in self.columns],
                 "; ".join(x for x in (r.note, f"{LABEL}: {r.flag}" if r.flag else "") if x)] for r in self.rows]
        return headers, rows

    def legend(self) -> list[str]:
        """What the cells' ± / [a, b] mean (where the table has them), then its notes."""
        legend = []
        if any(r.stderr for r in self.rows):
            legend.append("x ± y: mean ± its standard error over the row's n examples.")
        if any(r.interval for r in self.rows):
            legend.append("x [a, b]: the value and its 95% interval: Wilson's for a proportion of the row's n "
                          "independent examples, else the percentile bootstrap over the independent units named "
                          f"below (none from fewer than {MIN_UNITS} units).")
        resampled = {(k, u.unit) for r in self.rows for k, u in r.units.items()}
        if resampled:
            legend.append("resampling unit: " + "; ".join(f"{k}: {plural(unit)}" for k, unit in sorted(resampled)) + ".")
        legend += [f"competence floor of {k}: {f.describe()}; a system not beyond it does not do the task."
                   for k, f in self.floors.items()]
        legend += [f"{r.system}: {r.ignores_input}." for r in self.rows if r.ignores_input]
        return legend + list(self.notes)

    def to_markdown(self, heading: bool = True) -> str:
        """The table as markdown, under a ``## title`` heading unless ``heading`` is False
        (a reader that writes its own, e.g. the report)."""
        headers, rows = self.display()
        body = [f"## {self.title}", ""] if heading else []
        body += [markdown(headers, rows), *[f"- {line}" for line in self.legend()]]
        return "\n".join(body) + "\n"

    def to_html(self, heading: bool = True) -> str:
        """The table as an HTML fragment, under an ``<h2>`` title unless ``heading`` is False."""
        headers, rows = self.display()
        legend = self.legend()
        return ((f"<h2>{html.escape(self.title)}</h2>" if heading else "") + html_table(headers, rows)
                + ("<ul>" + "".join(f"<li>{html.escape(line)}</li>" for line in legend) + "</ul>" if legend else ""))

    def to_csv(self) -> str:
        se_keys = [c.key for c in self.columns if any(c.key in r.stderr for r in self.rows)]
        ci_keys = [c.key for c in self.columns if any(c.key in r.interval for r in self.rows)]
        headers = ["system", "paper_row", "n", *[c.key for c in self.columns], *[f"{k}_stderr" for k in se_keys],
                   *[f"{k}_{end}" for k in ci_keys for end in ("low", "high")], "note", LABEL]
        rows = [[r.system, r.paper_row, r.n, *[r.metrics.get(c.key) for c in self.columns],
                 *[r.stderr.get(k) for k in se_keys],
                 *[r.interval[k][i] if k in r.interval else None for k in ci_keys for i in (0, 1)], r.note, r.flag]
                for r in self.rows]
        return csv_text(headers, rows)

    def flat_metrics(self) -> dict[str, float]:
        """Every finite number as ``<system>/<metric>``, the ends of its 95% interval (where the row
        has one) beside it as ``<system>/<metric>_low`` / ``_high`` (MLflow metric names: a character
        MLflow refuses, e.g. of a token row's text, is written ``_x<hex>_``)."""
        values = {metric_name(f"{r.system}/{k}"): float(v) for r in self.rows for k, v in r.metrics.items()
                  if v is not None and math.isfinite(v)}
        ends = {metric_name(f"{r.system}/{k}_{end}"): float(x) for r in self.rows for k, bounds in r.interval.items()
                for end, x in zip(("low", "high"), bounds, strict=True) if math.isfinite(x)}
        return values | ends

    # -- the contract --------------------------------------------------------------
    def write(self, out: Path) -> list[Path]:
        systems = [r.system for r in self.rows]
        if len(set(systems)) != len(systems):
            raise ValueError(f"table {self.title!r}: duplicate system ids {systems}")
        (out / "table.md").write_text(self.to_markdown())
        (out / "table.csv").write_text(self.to_csv())
        write_json(out / self.FILE, {
            "title": self.title,
            "columns": [{"key": c.key, "header": c.header, "fmt": c.fmt} for c in self.columns],
            "rows": [{"system": r.system, "paper_row": r.paper_row, "n": r.n,
                      "metrics": {k: _finite(v) for k, v in r.metrics.items()},
                      "stderr": {k: _finite(v) for k, v in r.stderr.items()}, "note": r.note,
                      "interval": {k: list(v) for k, v in r.interval.items()}, "flag": r.flag,
                      "units": {k: u.to_json() for k, u in r.units.items()}, "ignores_input": r.ignores_input}
                     for r in self.rows],
            "notes": list(self.notes),
            "stand_in": self.stand_in,
            "floors": {k: f.to_json() for k, f in self.floors.items()},
        })
        return [out / name for name in self.FILES]

    @classmethod
    def read(cls, source: Source, stage: str = STAGE) -> EvalTable:
        where = locate(source, stage)
        raw = where.json(cls.FILE)
        f = cls.FILE
        columns = []
        for c in field(where, f, raw, "columns", list):
            columns.append(Column(field(where, f, c, "key", str), field(where, f, c, "header", str),
                                  field(where, f, c, "fmt", str)))
        rows = []
        for r in field(where, f, raw, "rows", list):
            metrics = field(where, f, r, "metrics", dict)
            for k, v in metrics.items():
                if v is not None and not isinstance(v, int | float):
                    raise where.error(f, f"is malformed: metric {k!r} of system {r.get('system')!r} is {v!r}",
                                      "rows")
            rows.append(TableRow(
                system=field(where, f, r, "system", str), metrics=metrics,
                n=field(where, f, r, "n", (int, type(None)), default=None),
                stderr=field(where, f, r, "stderr", dict, default={}),
                note=field(where, f, r, "note", str, default=""),
                paper_row=field(where, f, r, "paper_row", str, default=""),
                interval=_intervals(where, f, r),
                flag=field(where, f, r, "flag", str, default=""),
                units=_units(where, f, r),
                ignores_input=field(where, f, r, "ignores_input", str, default=""),
            ))
        return cls(field(where, f, raw, "title", str), columns, rows, field(where, f, raw, "notes", list, default=[]),
                   field(where, f, raw, "stand_in", str, default=""), _floors(where, f, raw))

    def row(self, system: str) -> TableRow:
        for r in self.rows:
            if r.system == system:
                return r
        raise KeyError(f"table {self.title!r} has no system {system!r}; systems: {[r.system for r in self.rows]}")


# the evaluation outputs with where they were read from (`Stored`), for the report's provenance and links
@dataclass(frozen=True)
class StoredEvalTable(Stored[EvalTable]):
    @classmethod
    def read(cls, source: Source, stage: str = EvalTable.STAGE) -> StoredEvalTable:
        return cls(EvalTable.read(source, stage), locate(source, stage))
