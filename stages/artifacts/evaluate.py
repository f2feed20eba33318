"""Contracts of the evaluation group's outputs.

- `EvalTable`: the system x metric table of an evaluation (``eval_lm``, ``eval_qa``,
  ``eval_summarization``): per row the system's id, the published row it reproduces
  (if any), n, the metrics, their standard errors (means) or 95% intervals (proportions:
  Wilson, `stages.common.intervals`) where the stage has them, a note (e.g. why a system
  did not run) and the reason the system is uninformative (`stages.common.degenerate`; "":
  it is not). Written as ``table.md``, ``table.csv``, ``table.json``;
  ``table.json`` is what `read` reads.
- `SimilarityResults` (``eval_similarity``), `ReconstructionResults`
  (``eval_reconstruction``), `NuggetAnalysis` (``analyze_nuggets``): the Nugget
  evaluations' per-system records and figures.

Rendering (markdown, HTML, CSV) is `stages.common.render`'s, the one rendering module; the
report shows a table no paper table names as `EvalTable.to_markdown` / `to_html` render it.
"""

from __future__ import annotations

import html
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import field as dc_field
from pathlib import Path
from typing import Any, ClassVar

from stages.artifacts.base import Stored, field, locate, records, write_json
from stages.common.degenerate import LABEL
from stages.common.render import csv_text, html_table, markdown
from stages.framework.stage import Artifact

Source = Artifact | Path | str
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


def _intervals(where: Any, f: str, r: dict[str, Any]) -> dict[str, tuple[float, float]]:
    """A row's ``interval`` ({metric: [low, high]}) checked."""
    raw = field(where, f, r, "interval", dict, default={})
    for k, v in raw.items():
        if not (isinstance(v, list) and len(v) == 2 and all(isinstance(x, int | float) for x in v)):
            raise where.error(f, f"is malformed: interval {k!r} of system {r.get('system')!r} is {v!r}", "rows")
    return {k: (float(v[0]), float(v[1])) for k, v in raw.items()}


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

    def _display(self) -> tuple[list[str], list[list[str]]]:
        """Headers and rows as the table is shown (markdown, HTML)."""
        headers = ["system", "n", *[c.header for c in self.columns], "note"]
        rows = [[r.system, "" if r.n is None else str(r.n), *[self._cell(r, c) for c in self.columns],
                 "; ".join(x for x in (r.note, f"{LABEL}: {r.flag}" if r.flag else "") if x)] for r in self.rows]
        return headers, rows

    def _legend(self) -> list[str]:
        """What the cells' ± / [a, b] mean (where the table has them), then its notes."""
        legend = []
        if any(r.stderr for r in self.rows):
            legend.append("x ± y: mean ± its standard error over the row's n examples.")
        if any(r.interval for r in self.rows):
            legend.append("x [a, b]: the value and its 95% interval: Wilson's for a proportion of the row's n "
                          "examples, a bootstrap percentile interval over documents / segments for a corpus BLEU or "
                          "a perplexity.")
        return legend + list(self.notes)

    def to_markdown(self, heading: bool = True) -> str:
        """The table as markdown, under a ``## title`` heading unless ``heading`` is False
        (a reader that writes its own, e.g. the report)."""
        headers, rows = self._display()
        body = [f"## {self.title}", ""] if heading else []
        body += [markdown(headers, rows), *[f"- {line}" for line in self._legend()]]
        return "\n".join(body) + "\n"

    def to_html(self, heading: bool = True) -> str:
        """The table as an HTML fragment, under an ``<h2>`` title unless ``heading`` is False."""
        headers, rows = self._display()
        legend = self._legend()
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
                      "interval": {k: list(v) for k, v in r.interval.items()}, "flag": r.flag}
                     for r in self.rows],
            "notes": list(self.notes),
            "stand_in": self.stand_in,
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
            ))
        return cls(field(where, f, raw, "title", str), columns, rows, field(where, f, raw, "notes", list, default=[]),
                   field(where, f, raw, "stand_in", str, default=""))

    def row(self, system: str) -> TableRow:
        for r in self.rows:
            if r.system == system:
                return r
        raise KeyError(f"table {self.title!r} has no system {system!r}; systems: {[r.system for r in self.rows]}")


def _write_records(out: Path, stem: str, rows: list[dict[str, Any]], columns: Sequence[str]) -> None:
    cells = [[r.get(c) for c in columns] for r in rows]
    (out / f"{stem}.csv").write_text(csv_text(columns, cells))
    (out / f"{stem}.md").write_text(markdown(columns, cells))


SIMILARITY_COLUMNS = ("label", "mode", "objective", "ratio", "scorer_layer", "selector", "feedback", "task", "mrr",
                      "vectors_per_doc", "n_tasks", LABEL)


@dataclass(frozen=True)
class SimilarityResults:
    """``eval_similarity``: ``similarity.json`` (``rows``: one record per system and task
    with ``label``, ``mode`` nugget | bottleneck | colbart, ``task`` pi | rr, ``mrr``,
    ``mrr_se`` (its standard error over the tasks), ``n_tasks``, ``data`` and the system's
    fields; ``colbart_from``), ``.csv`` / ``.md``, and the per-query `EXAMPLES`."""

    STAGE: ClassVar[str] = "eval_similarity"
    FILE: ClassVar[str] = "similarity.json"
    EXAMPLES: ClassVar[str] = "ranks.jsonl"  # per system, task and query: the answer's reciprocal rank
    rows: list[dict[str, Any]]
    colbart_from: str | None = None

    def write(self, out: Path) -> list[Path]:
        write_json(out / self.FILE, {"rows": self.rows, "colbart_from": self.colbart_from})
        _write_records(out, "similarity", self.rows, SIMILARITY_COLUMNS)
        return [out / self.FILE, out / "similarity.csv", out / "similarity.md"]

    @classmethod
    def read(cls, source: Source) -> SimilarityResults:
        where = locate(source, cls.STAGE)
        raw = where.json(cls.FILE)
        rows = records(where, cls.FILE, field(where, cls.FILE, raw, "rows", list),
                       [("label", str), ("mode", str), ("task", str), ("mrr", float), ("n_tasks", int), ("data", str)])
        return cls(rows, field(where, cls.FILE, raw, "colbart_from", (str, type(None)), default=None))


CAPTIONS_FILE = "figures.json"  # {figure file name: caption}, beside the figures


def write_captions(out: Path, static: dict[str, str], details: dict[str, str]) -> Path:
    """``figures.json``: each figure's fixed caption (``static``) followed by what this run
    adds to it (``details``: n, data source); a detail for a figure with no caption is an error."""
    unknown = sorted(set(details) - set(static))
    if unknown:
        raise ValueError(f"captions for unknown figures {unknown}; figures: {sorted(static)}")
    return write_json(out / CAPTIONS_FILE,
                      {name: f"{caption} {details[name]}" if details.get(name) else caption
                       for name, caption in static.items()})


def read_captions(path: Path | None, stage: str, static: dict[str, str]) -> dict[str, str]:
    """Each figure's caption: the run's ``figures.json`` where the output has one (an output
    written before captions existed has none), else the fixed caption."""
    if path is None or not (path / CAPTIONS_FILE).is_file():
        return dict(static)
    where = locate(path, stage)
    raw = where.json(CAPTIONS_FILE)
    if not isinstance(raw, dict):
        raise where.error(CAPTIONS_FILE, "is malformed: expected {figure file name: caption}")
    for name, caption in raw.items():
        if name not in static or not isinstance(caption, str):
            raise where.error(CAPTIONS_FILE, f"is malformed: {name!r} -> {caption!r} is not a caption of one of "
                                             f"the figures {sorted(static)}")
    return {name: raw.get(name, caption) for name, caption in static.items()}


class WithFigures:
    """The figures of an evaluation output (`FIGURES`, in its folder ``path``) and their
    captions (`FIGURE_CAPTIONS`, completed by the run's ``figures.json``)."""

    STAGE: ClassVar[str]
    FIGURES: ClassVar[tuple[str, ...]]
    FIGURE_CAPTIONS: ClassVar[dict[str, str]]
    path: Path | None

    def figures(self) -> list[Path]:
        """The figures present (drawing one is optional)."""
        return [self.path / n for n in self.FIGURES if self.path and (self.path / n).is_file()]

    @classmethod
    def write_captions(cls, out: Path, details: dict[str, str]) -> Path:
        """``figures.json``: `FIGURE_CAPTIONS` with this run's ``details`` (n, data) appended."""
        return write_captions(out, cls.FIGURE_CAPTIONS, details)

    def captions(self) -> dict[str, str]:
        """{figure file name: caption} for every figure of `FIGURES` (`read_captions`)."""
        return read_captions(self.path, self.STAGE, self.FIGURE_CAPTIONS)


RECONSTRUCTION_COLUMNS = ("label", "kind", "objective", "ratio", "scorer_layer", "decoder", "bleu", "bleu_low",
                          "bleu_high", "n_docs", LABEL)


@dataclass(frozen=True)
class ReconstructionResults(WithFigures):
    """``eval_reconstruction``: ``reconstruction.json`` (``rows``: one record per system with
    ``label``, ``kind``, ``objective``, ``ratio``, ``bleu``, ``n_docs``, from two documents on the
    ends of its 95% bootstrap interval ``bleu_low`` / ``bleu_high``; ``split``,
    ``beam_size``), ``.csv`` / ``.md``, the figure ``bleu_vs_ratio.png`` with its caption in
    ``figures.json`` and ``samples.jsonl``."""

    STAGE: ClassVar[str] = "eval_reconstruction"
    FILE: ClassVar[str] = "reconstruction.json"
    EXAMPLES: ClassVar[str] = "samples.jsonl"  # a few decoded texts per system
    FIGURES: ClassVar[tuple[str, ...]] = ("bleu_vs_ratio.png",)
    FIGURE_CAPTIONS: ClassVar[dict[str, str]] = {
        "bleu_vs_ratio.png": "Nugget fig. 4: corpus BLEU (sacrebleu, 0-100) of documents of build_mt_docs "
                             "decoded by beam search from each model's encoding, against the model's compression "
                             "ratio r; one line per objective (AE: the reference is the input document, MT: its "
                             "translation) and scorer layer; single-vector baselines (one vector per document) "
                             "drawn at r = 0.",
    }
    rows: list[dict[str, Any]]
    split: str
    beam_size: int
    path: Path | None = None

    def write(self, out: Path) -> list[Path]:
        write_json(out / self.FILE, {"rows": self.rows, "split": self.split, "beam_size": self.beam_size})
        _write_records(out, "reconstruction", self.rows, RECONSTRUCTION_COLUMNS)
        return [out / self.FILE, out / "reconstruction.csv", out / "reconstruction.md"]

    @classmethod
    def read(cls, source: Source) -> ReconstructionResults:
        where = locate(source, cls.STAGE)
        raw = where.json(cls.FILE)
        rows = records(where, cls.FILE, field(where, cls.FILE, raw, "rows", list),
                       [("label", str), ("kind", str), ("objective", str), ("bleu", float), ("n_docs", int)])
        return cls(rows, field(where, cls.FILE, raw, "split", str), field(where, cls.FILE, raw, "beam_size", int),
                   where.path)


@dataclass(frozen=True)
class NuggetAnalysis(WithFigures):
    """``analyze_nuggets``: ``token_frequency.json`` ({system: shares of 'the', of
    punctuation and of the top nugget tokens among nuggets vs in text, ``label``,
    ``objective``, ``ratio``}), ``probability_gain.json``, the figures and their captions
    (``figures.json``)."""

    STAGE: ClassVar[str] = "analyze_nuggets"
    FREQUENCY: ClassVar[str] = "token_frequency.json"
    GAIN: ClassVar[str] = "probability_gain.json"
    EXAMPLES: ClassVar[str] = "nuggets.html"  # documents with their nuggets highlighted, per model
    FIGURES: ClassVar[tuple[str, ...]] = ("token_frequency.png", "probability_gain.png", "nugget_positions.png",
                                          "probability_gain_relative.png", "nuggets.html")
    FIGURE_CAPTIONS: ClassVar[dict[str, str]] = {
        "token_frequency.png": "Nugget fig. 5: the 6 most frequent nugget tokens of the first (AE) model, and their "
                               "share (%) among the nuggets of each model encoding English (AE, MT) and in the "
                               "text, on the source side of build_mt_docs' eval.nugget_split split (dev, as the "
                               "paper); a token and its word-initial variant (the same word after a space) count as one word.",
        "probability_gain.png": "Nugget fig. 7: mean probability gain p(y_i | y_<i, z_j) - p(y_i | y_<i) (eq. 9, "
                                "teacher-forced AE decoding that sees only nugget j) at each token index i of the "
                                "document, for the 3rd, 6th and 9th nuggets in text order; documents of "
                                "build_mt_docs' eval.nugget_split split.",
        "nugget_positions.png": "Nugget fig. 7 (positions): share of the documents whose 3rd, 6th or 9th nugget "
                                "sits at each token index; the documents of probability_gain.png.",
        "probability_gain_relative.png": "Nugget fig. 8: mean probability gain (eq. 9) at each token index relative "
                                         "to its nugget (0: the nugget's own token; ±16 tokens), over every nugget "
                                         "of documents of 64, 128 and 256 tokens cut from consecutive build_mt_docs "
                                         "dev documents; a length above the model's positions is left out.",
        "nuggets.html": "Nugget fig. 6: build_mt_docs dev documents, each token shaded by the AE model's nugget "
                        "score, nuggets in green.",
    }
    token_frequency: dict[str, dict[str, Any]]
    probability_gain: dict[str, Any]
    path: Path | None = None

    def write(self, out: Path) -> list[Path]:
        return [write_json(out / self.FREQUENCY, self.token_frequency), write_json(out / self.GAIN, self.probability_gain)]

    @classmethod
    def read(cls, source: Source) -> NuggetAnalysis:
        where = locate(source, cls.STAGE)
        freq = where.json(cls.FREQUENCY)
        if not isinstance(freq, dict):
            raise where.error(cls.FREQUENCY, "is malformed: expected {system: statistics}")
        for stats in freq.values():
            for key, kind in (("label", str), ("objective", str), ("top", list), ("the_share_nuggets", float),
                              ("the_share_text", float), ("punctuation_share_nuggets", float),
                              ("punctuation_share_text", float)):
                field(where, cls.FREQUENCY, stats, key, kind)
        return cls(freq, where.json(cls.GAIN), where.path)


# the evaluation outputs with where they were read from (`Stored`), for the report's provenance and links
@dataclass(frozen=True)
class StoredEvalTable(Stored[EvalTable]):
    @classmethod
    def read(cls, source: Source, stage: str = EvalTable.STAGE) -> StoredEvalTable:
        return cls(EvalTable.read(source, stage), locate(source, stage))


@dataclass(frozen=True)
class StoredSimilarityResults(Stored[SimilarityResults]):
    @classmethod
    def read(cls, source: Source) -> StoredSimilarityResults:
        return cls(SimilarityResults.read(source), locate(source, SimilarityResults.STAGE))


@dataclass(frozen=True)
class StoredReconstructionResults(Stored[ReconstructionResults]):
    @classmethod
    def read(cls, source: Source) -> StoredReconstructionResults:
        return cls(ReconstructionResults.read(source), locate(source, ReconstructionResults.STAGE))


@dataclass(frozen=True)
class StoredNuggetAnalysis(Stored[NuggetAnalysis]):
    @classmethod
    def read(cls, source: Source) -> StoredNuggetAnalysis:
        return cls(NuggetAnalysis.read(source), locate(source, NuggetAnalysis.STAGE))
