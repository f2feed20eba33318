"""How a paper finding is judged on this run's cells: the verdicts and their rules.

A finding is a claim the papers make about their tables, written as one of four tests on
measured cells (`MeasuredValue`: a value, its n, its 95% interval, the per-unit statistics
behind it, its competence floor, its flags):

- `Comparison` ("Nugget2D reconstructs better than ICAE"): the difference of the two cells'
  statistics, with the 95% bootstrap interval of the *difference* (`stages.common.resampling`:
  paired over the units both systems were scored on, e.g. the same documents; independent
  resampling of each where they were not). Shown when that interval lies wholly on the paper's
  side of 0.
- `Level` ("BLEU > 99 from r = 0.1"): every measured value's 95% interval lies above the level.
- `Within` ("Nugget2D's KV is ~r of Full's"): every measured value of a quantity counted exactly
  (bytes of tensors, no sampling) lies in a stated range.
- `NoLoss` ("restoration training keeps accuracy"): a non-inferiority test with a margin
  ``margin`` stated with the finding (why that margin: ``margin_why``). Shown only when the 95%
  interval of kept − reference lies above −margin; an interval wholly below −margin is a loss
  (not shown); one that straddles −margin cannot tell (too few examples). Absence of a
  significant difference is never taken for equivalence.

Before any of that, in this order (`RULES` is the legend, word for word what the code applies):

1. ``not measurable``: a cell the finding needs was not measured in this run, or two cells were
   measured only on systems of different training budgets.
2. ``not measurable at this scale (no system does the task)``: every system the finding stands
   on (for a `NoLoss`, the trained system it is about) is below its competence floor (`stages.common.floors`: its value not beyond what a trivial
   reference reaches on the same examples, or the model ignores its input).
3. ``not shown (degenerate model)``: a cell it stands on was measured on a system its evaluation
   flagged uninformative (`stages.common.degenerate`).
4. ``too few examples to tell``: fewer independent units than an interval needs
   (`stages.common.resampling.MIN_UNITS`), neither per-unit statistics nor intervals behind a
   cell, or (a `NoLoss`) the difference's interval straddles −margin. Cells without per-unit
   statistics but with 95% intervals (e.g. lm-evaluation-harness's, the papers' own numbers) are
   compared by the normal approximation of two independent estimates (`_from_intervals`).
5. ``shown`` / ``not shown`` by the test above.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from stages.common.degenerate import LABEL
from stages.common.intervals import Z95
from stages.common.resampling import MIN_UNITS, Difference, difference, plural
from stages.report.tables import MeasuredValue, ReportTable

SHOWN, NOT_SHOWN, NOT_MEASURABLE = "shown", "not shown", "not measurable"
DEGENERATE = "not shown (degenerate model)"
NO_TASK = "not measurable at this scale (no system does the task)"
TOO_FEW = "too few examples to tell"
VERDICTS = (SHOWN, NOT_SHOWN, TOO_FEW, NO_TASK, DEGENERATE, NOT_MEASURABLE)
RULE_ORDER = (NOT_MEASURABLE, NO_TASK, DEGENERATE, TOO_FEW, SHOWN, NOT_SHOWN)  # the order the rules are applied in

# the legend of the findings section: each verdict's rule as `Comparison`, `Level` and `NoLoss` apply it
RULES: dict[str, str] = {
    NOT_MEASURABLE: "a cell the finding needs was not measured in this run, or only on systems trained with "
                    "different budgets",
    NO_TASK: "every system the finding compares (for a no-loss claim: the trained system it is about) is below its "
             "competence floor: its value is not beyond what a trivial reference reaches on the same examples (the "
             "floor named in the evidence), or its loss does not rise when it reads another example's compressed "
             "input (it ignores its input)",
    DEGENERATE: f"a cell it stands on was measured on a system flagged {LABEL} (constant or looping outputs, "
                "empty generations, perplexity above a unigram model, 0 of n beside a baseline at 0)",
    TOO_FEW: f"fewer than {MIN_UNITS} independent units (documents, articles, questions, sentences, ranking tasks) "
             "behind a cell, so no 95% interval is computed; or, for a no-loss claim, the 95% interval of the "
             "difference straddles minus the margin",
    SHOWN: "a comparison: the 95% bootstrap interval of the difference between the two systems (paired over the "
           "units both were scored on, else each resampled independently; for cells without per-unit statistics, "
           "the normal approximation from the two cells' intervals) lies wholly on the paper's side of 0; "
           "a level: every value's 95% interval lies beyond the level; a no-loss claim: the 95% interval of "
           "kept minus reference lies above minus the margin stated with the finding; a range (a quantity counted "
           "exactly, such as bytes of KV): every value lies within it",
    NOT_SHOWN: "otherwise: the difference's interval holds 0 or lies on the other side, a value's interval reaches "
               "the level's wrong side, (no loss) the difference's interval lies wholly below minus the margin, or "
               "(a range) a value lies outside it",
}


@dataclass(frozen=True)
class Cell:
    """One measured cell: table id, published row id, column."""

    table: str
    row: str
    column: str

    def find(self, tables: dict[str, ReportTable]) -> list[MeasuredValue]:
        table = tables.get(self.table)
        return table.values(self.row, self.column) if table else []

    def describe(self) -> str:
        return f"{self.table} {self.row} {self.column}"


@dataclass(frozen=True)
class Verdict:
    finding: str  # id
    claim: str
    source: str
    verdict: str  # one of VERDICTS
    evidence: str


def _absent(cells: tuple[tuple[Cell, list[MeasuredValue]], ...]) -> str:
    return "absent from this run: " + "; ".join(c.describe() for c, v in cells if not v)


def _flags(*values: MeasuredValue) -> str:
    """What the evidence of a finding on uninformative systems adds: each flag."""
    flagged = {v.label: v.flag for v in values if v.flag}
    return " (" + "; ".join(f"{label} is {LABEL}: {flag}" for label, flag in flagged.items()) + ")"


def _below_floor(*values: MeasuredValue) -> str:
    """Why every one of ``values`` is below its floor ("" where one of them does the task)."""
    reasons = [(v.label, v.below_floor) for v in values]
    if not values or not all(r for _, r in reasons):
        return ""
    return " (" + "; ".join(f"{label}: {r}" for label, r in dict(reasons).items()) + ")"


def _screen(evidence: str, *values: MeasuredValue) -> tuple[str, str] | None:
    """Rules 2 and 3 (module docstring): the verdict and its evidence, or None to go on."""
    if below := _below_floor(*values):
        return NO_TASK, evidence + below
    if any(v.flag for v in values):
        return DEGENERATE, evidence + _flags(*values)
    return None


def _difference(a: MeasuredValue, b: MeasuredValue) -> Difference | str:
    """``a - b`` with its interval, or why there is none (rule 4): the bootstrap of
    `stages.common.resampling.difference` where both cells carry their per-unit statistics, else
    (cells read from elsewhere, e.g. lm-evaluation-harness's, or the papers' own numbers) the normal
    approximation of two independent estimates from the cells' 95% intervals: d ± 1.96 sqrt(se_a² +
    se_b²), each se a quarter-width / 1.96 (what Welch's interval does with known standard errors)."""
    if a.units is None or b.units is None:
        return _from_intervals(a, b)
    d = difference(a.units, b.units)
    if d is None:
        return (f"{min(a.units.n, b.units.n)} {plural(a.units.unit)}, fewer than the {MIN_UNITS} an interval needs "
                f"(benchmarks/bootstrap_coverage.py)")
    return d


def _from_intervals(a: MeasuredValue, b: MeasuredValue) -> Difference | str:
    missing = [v.label for v in (a, b) if v.low is None or v.high is None]
    if missing:
        return f"no per-unit statistics and no interval behind {', '.join(missing)}: no interval of the difference"
    few = [v for v in (a, b) if v.n is None or v.n < MIN_UNITS]
    if few:
        return (f"{', '.join(f'{v.label} (n={v.n})' for v in few)}: fewer than the {MIN_UNITS} independent units an "
                "interval needs")
    assert a.low is not None and a.high is not None and b.low is not None and b.high is not None
    se = math.hypot((a.high - a.low) / (2 * Z95), (b.high - b.low) / (2 * Z95))
    value = a.value - b.value
    return Difference(value, value - Z95 * se, value + Z95 * se, min(a.n or 0, b.n or 0), "example", False,
                      "normal approximation from the two cells' 95% intervals, independent")


@dataclass(frozen=True)
class Comparison:
    """``lower`` is expected below ``higher`` (the paper's direction)."""

    id: str
    claim: str
    source: str
    lower: Cell
    higher: Cell

    @property
    def cells(self) -> tuple[Cell, ...]:
        """The cells the finding stands on."""
        return self.lower, self.higher

    def judge(self, tables: dict[str, ReportTable]) -> Verdict:
        low, high = self.lower.find(tables), self.higher.find(tables)
        if not low or not high:
            return self._verdict(NOT_MEASURABLE, _absent(((self.lower, low), (self.higher, high))))
        pairs = [(a, b) for a in low for b in high if a.budget == b.budget]
        if not pairs:
            budgets = "; ".join(f"{v.label}: {v.budget or 'not trained here'}" for v in (*low, *high))
            return self._verdict(NOT_MEASURABLE, f"no pair of systems trained with the same budget ({budgets})")
        a, b = pairs[0]  # the first same-budget pair the table lists for the two published rows
        both = a.label == b.label  # two columns of one row: the columns tell the sides apart
        evidence = f"{a.describe(both)} vs {b.describe(both)}"
        if screened := _screen(evidence, a, b):
            return self._verdict(*screened)
        d = _difference(b, a)  # higher - lower: > 0 is the paper's direction
        if isinstance(d, str):
            return self._verdict(TOO_FEW, f"{evidence}; {d}")
        evidence += f"; {b.label if not both else b.column} minus {a.label if not both else a.column}: {d.describe()}"
        if d.low > 0:
            return self._verdict(SHOWN, evidence)
        why = "the paper's direction, but the interval holds 0" if d.value > 0 else "not the paper's direction"
        return self._verdict(NOT_SHOWN, f"{evidence} ({why})")

    def _verdict(self, verdict: str, evidence: str) -> Verdict:
        return Verdict(self.id, self.claim, self.source, verdict, evidence)


@dataclass(frozen=True)
class Level:
    """Every measured value of ``cell`` is at least ``at_least`` (``strict``: above it)."""

    id: str
    claim: str
    source: str
    cell: Cell
    at_least: float
    strict: bool = False

    @property
    def cells(self) -> tuple[Cell, ...]:
        return (self.cell,)

    def judge(self, tables: dict[str, ReportTable]) -> Verdict:
        values = self.cell.find(tables)
        if not values:
            return self._verdict(NOT_MEASURABLE, _absent(((self.cell, values),)))
        lowest = min(values, key=lambda v: v.low if v.low is not None else v.value)
        needs = f"needs {'>' if self.strict else '>='} {self.at_least:g}"
        evidence = f"lowest of {len(values)}: {lowest.describe()}; {needs}"
        if screened := _screen(evidence, *values):
            return self._verdict(*screened)
        if not self._beyond(lowest.value):
            return self._verdict(NOT_SHOWN, evidence)
        if lowest.low is None:
            return self._verdict(TOO_FEW, f"{evidence} (the value reaches it, but without a 95% interval)")
        if not self._beyond(lowest.low):
            return self._verdict(NOT_SHOWN, f"{evidence} (its 95% interval reaches below)")
        return self._verdict(SHOWN, evidence)

    def _beyond(self, x: float) -> bool:
        return x > self.at_least if self.strict else x >= self.at_least

    def _verdict(self, verdict: str, evidence: str) -> Verdict:
        return Verdict(self.id, self.claim, self.source, verdict, evidence)


@dataclass(frozen=True)
class NoLoss:
    """Non-inferiority: ``kept`` is not worse than ``reference`` by ``margin`` or more (the 95%
    interval of kept − reference lies above −``margin``; ``margin_why`` says where the margin
    comes from, shown with the finding)."""

    id: str
    claim: str
    source: str
    reference: Cell
    kept: Cell
    margin: float
    margin_why: str

    def __post_init__(self) -> None:
        if not (math.isfinite(self.margin) and self.margin > 0):
            raise ValueError(f"NoLoss {self.id}: margin {self.margin!r} must be a finite number > 0")

    @property
    def cells(self) -> tuple[Cell, ...]:
        return self.reference, self.kept

    def judge(self, tables: dict[str, ReportTable]) -> Verdict:
        ref, kept = self.reference.find(tables), self.kept.find(tables)
        if not ref or not kept:
            return self._verdict(NOT_MEASURABLE, _absent(((self.reference, ref), (self.kept, kept))))
        a, b = ref[0], kept[0]
        evidence = f"{b.describe()} vs {a.describe()}; margin {self.margin:g}"
        # the claim is about what training did to the kept system: below its floor (it did not learn its own task,
        # e.g. a restoration decoder that ignores the embedding), there is nothing to keep or lose
        if screened := _screen(evidence, b) or _screen(evidence, a, b):
            return self._verdict(*screened)
        d = _difference(b, a)
        if isinstance(d, str):
            return self._verdict(TOO_FEW, f"{evidence}; {d}")
        evidence += f"; kept minus reference: {d.describe()}"
        if d.low > -self.margin:
            return self._verdict(SHOWN, f"{evidence} (above -{self.margin:g})")
        if d.high < -self.margin:
            return self._verdict(NOT_SHOWN, f"{evidence} (a loss beyond the margin)")
        return self._verdict(TOO_FEW, f"{evidence} (straddles -{self.margin:g})")

    def _verdict(self, verdict: str, evidence: str) -> Verdict:
        return Verdict(self.id, self.claim, self.source, verdict, evidence)


@dataclass(frozen=True)
class Within:
    """Every measured value of ``cell`` lies in [``low``, ``high``]: a claim on a quantity counted
    exactly, not sampled (bytes of tensors, e.g. "Nugget2D's KV is ~r of the full model's"). A value
    with a 95% interval must hold it inside the range; one without is taken as exact, so only cells
    whose evaluation counts them (and says so in its notes) belong here."""

    id: str
    claim: str
    source: str
    cell: Cell
    low: float
    high: float

    @property
    def cells(self) -> tuple[Cell, ...]:
        return (self.cell,)

    def judge(self, tables: dict[str, ReportTable]) -> Verdict:
        values = self.cell.find(tables)
        if not values:
            return Verdict(self.id, self.claim, self.source, NOT_MEASURABLE, _absent(((self.cell, values),)))
        evidence = (f"{len(values)} values: " + "; ".join(v.describe() for v in values)
                    + f"; needs every value in [{self.low:g}, {self.high:g}]")
        if screened := _screen(evidence, *values):
            return Verdict(self.id, self.claim, self.source, *screened)
        outside = [v for v in values if not all(self.low <= x <= self.high for x in (
            v.low if v.low is not None else v.value, v.high if v.high is not None else v.value))]
        if outside:
            return Verdict(self.id, self.claim, self.source, NOT_SHOWN,
                           f"{evidence} (outside: {', '.join(v.label for v in outside)})")
        return Verdict(self.id, self.claim, self.source, SHOWN, evidence)


Finding = Comparison | Level | NoLoss | Within


def counts(verdicts: list[Verdict] | tuple[Verdict, ...]) -> dict[str, int]:
    """How many findings got each verdict: ``findings_<verdict>`` (words joined by "_", the
    parenthesised part dropped: ``findings_not_measurable_at_this_scale``, ``findings_degenerate``),
    where ``findings_not_shown`` counts the degenerate ones too."""
    names = {SHOWN: "shown", NOT_SHOWN: "not_shown", NOT_MEASURABLE: "not_measurable",
             NO_TASK: "not_measurable_at_this_scale", TOO_FEW: "too_few", DEGENERATE: "degenerate"}
    out = {f"findings_{name}": sum(v.verdict == verdict for v in verdicts) for verdict, name in names.items()}
    out["findings_not_shown"] += out["findings_degenerate"]
    return out
