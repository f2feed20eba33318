"""The papers' findings, checked against this run's numbers: shown / not shown / not measurable.

Each finding is a claim the papers make about their tables, written as a comparison
between two measured cells of a report table (`Comparison`: "Nugget2D's perplexity is
lower than Compressive's at the same budget"), as a level one cell reaches (`Level`:
"Nugget AE reconstructs at BLEU > 99 from r = 0.1", the paper's own bound), or as a cell that
does not fall below another (`NoLoss`: "restoration training does not sacrifice downstream
accuracy", RE appendix E). Cells are addressed
by the published row they reproduce (``row_id``, `stages.report.published`) and a column, so a
verdict always stands on the same cells as the tables above it; a claim on no published cell
addresses rows by another id their table gives them (`ReportTable.aliases`: fig. 4's AE models at
the lowest and the highest ratio of a training budget). Where a published row has
several measured systems (e.g. the sweep's model and train_baselines' ``nugget_mt``), a
comparison takes the first pair, in table order, of systems trained with the same budget
(`MeasuredValue.budget`, `stages.report.budgets`). The verdict is computed, never written by
hand:

- ``not measurable``: a cell the finding needs was not measured in this run, or its two cells
  were measured only on systems of different training budgets;
- ``shown``: the measured numbers point the way the paper's do and their 95% intervals
  do not overlap (a `Level`: every value reaches the level);
- ``not shown``: they point the other way, the difference is within the intervals, or a
  cell has no interval: a point estimate cannot tell a difference from noise, so the
  report does not claim it (the evidence says when the direction matched);
- for a `NoLoss`: ``shown`` when the cell's 95% interval reaches the reference's (no loss beyond
  the intervals: at a small n a weak claim, which the evidence's intervals show), ``not shown``
  when it lies wholly below it or a cell has no interval;
- ``not shown (degenerate model)``: a cell it stands on was measured on a system its
  evaluation flagged uninformative (`stages.common.degenerate`: constant outputs, repetition
  loops or empty generations, perplexity above a unigram model, 0 of n beside a baseline at
  0), whatever the numbers: they measure no method. The evidence names the flag.

A proportion's interval is Wilson's (`stages.common.intervals`), so an extreme (0 of n, n
of n) never has a zero-width interval that makes a difference look certain; a corpus BLEU's and a
perplexity's is the 95% bootstrap interval over the documents / segments they pool (none from one).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from stages.common.degenerate import LABEL
from stages.report.published import RE_TASKS
from stages.report.re_tables import TABLE9, TABLE10, restoration_table_id
from stages.report.tables import HIGHEST_RATIO_AE, LOWEST_RATIO_AE, MeasuredValue, ReportTable

SHOWN, NOT_SHOWN, NOT_MEASURABLE = "shown", "not shown", "not measurable"
DEGENERATE = "not shown (degenerate model)"


@dataclass(frozen=True)
class Cell:
    """One measured cell: table id, published row id, column."""

    table: str
    row: str
    column: str

    def find(self, tables: dict[str, ReportTable]) -> list[MeasuredValue]:
        table = tables.get(self.table)
        return table.values(self.row, self.column) if table else []


@dataclass(frozen=True)
class Verdict:
    finding: str  # id
    claim: str
    source: str
    verdict: str  # SHOWN / NOT_SHOWN / NOT_MEASURABLE
    evidence: str


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
            missing = [c for c, v in ((self.lower, low), (self.higher, high)) if not v]
            return Verdict(self.id, self.claim, self.source, NOT_MEASURABLE,
                           "absent from this run: " + "; ".join(f"{c.table} {c.row} {c.column}" for c in missing))
        pairs = [(a, b) for a in low for b in high if a.budget == b.budget]
        if not pairs:
            budgets = "; ".join(f"{v.label}: {v.budget or 'not trained here'}" for v in (*low, *high))
            return Verdict(self.id, self.claim, self.source, NOT_MEASURABLE,
                           f"no pair of systems trained with the same budget ({budgets})")
        a, b = pairs[0]  # the first same-budget pair the table lists for the two published rows
        both = a.label == b.label  # two columns of one row: the columns tell the sides apart
        evidence = f"{a.describe(both)} vs {b.describe(both)}"
        if a.flag or b.flag:
            return Verdict(self.id, self.claim, self.source, DEGENERATE, evidence + _flags(a, b))
        if a.value >= b.value:
            return Verdict(self.id, self.claim, self.source, NOT_SHOWN, evidence)
        if a.high is None or b.low is None:
            return Verdict(self.id, self.claim, self.source, NOT_SHOWN,
                           evidence + " (the paper's direction, but without an interval: not told from noise)")
        if a.high >= b.low:
            return Verdict(self.id, self.claim, self.source, NOT_SHOWN, evidence + " (difference within the 95% intervals)")
        return Verdict(self.id, self.claim, self.source, SHOWN, evidence)


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
            return Verdict(self.id, self.claim, self.source, NOT_MEASURABLE,
                           f"absent from this run: {self.cell.table} {self.cell.row} {self.cell.column}")
        lowest = min(values, key=lambda v: v.value)
        reached = lowest.value > self.at_least if self.strict else lowest.value >= self.at_least
        evidence = f"lowest of {len(values)}: {lowest.describe()}; needs {'>' if self.strict else '>='} {self.at_least:g}"
        if any(v.flag for v in values):
            return Verdict(self.id, self.claim, self.source, DEGENERATE, evidence + _flags(*values))
        return Verdict(self.id, self.claim, self.source, SHOWN if reached else NOT_SHOWN, evidence)


@dataclass(frozen=True)
class NoLoss:
    """``kept`` does not fall below ``reference``: its 95% interval reaches the reference's."""

    id: str
    claim: str
    source: str
    reference: Cell
    kept: Cell

    @property
    def cells(self) -> tuple[Cell, ...]:
        return self.reference, self.kept

    def judge(self, tables: dict[str, ReportTable]) -> Verdict:
        ref, kept = self.reference.find(tables), self.kept.find(tables)
        if not ref or not kept:
            missing = [c for c, v in ((self.reference, ref), (self.kept, kept)) if not v]
            return Verdict(self.id, self.claim, self.source, NOT_MEASURABLE,
                           "absent from this run: " + "; ".join(f"{c.table} {c.row} {c.column}" for c in missing))
        a, b = ref[0], kept[0]
        evidence = f"{b.describe()} vs {a.describe()}"
        if a.flag or b.flag:
            return Verdict(self.id, self.claim, self.source, DEGENERATE, evidence + _flags(a, b))
        if a.low is None or b.high is None:
            return Verdict(self.id, self.claim, self.source, NOT_SHOWN, evidence + " (without an interval)")
        if b.high < a.low:
            return Verdict(self.id, self.claim, self.source, NOT_SHOWN, evidence + " (below, beyond the 95% intervals)")
        return Verdict(self.id, self.claim, self.source, SHOWN,
                       evidence + (" (within the 95% intervals)" if b.value < a.value else " (not below)"))


def _flags(*values: MeasuredValue) -> str:
    """What the evidence of a finding on uninformative systems adds: each flag."""
    flagged = {v.label: v.flag for v in values if v.flag}
    return " (" + "; ".join(f"{label} is {LABEL}: {flag}" for label, flag in flagged.items()) + ")"


Finding = Comparison | Level | NoLoss


def _re_restoration_findings() -> tuple[Comparison, ...]:
    """RE §4.2 on table 2 (one sentence, ROUGE-L), per configuration (a)-(d): mean pooling
    restores better than [CLS] (gating decoder), and with mean pooling the decoders rank
    input < cross < gating."""

    def cell(config: str, pooling: str, decoder: str) -> Cell:
        return Cell(restoration_table_id(1), f"1|{config}|{pooling}|{decoder}", "rougeL")

    out: list[Comparison] = []
    for config in "abcd":
        out += [
            Comparison(f"re_mean_beats_cls_{config}", f"RE ({config}): a mean-pooled embedding restores a sentence "
                       "better than the [CLS] one (gating decoder, ROUGE-L)", "RE table 2",
                       cell(config, "cls", "gating"), cell(config, "mean", "gating")),
            Comparison(f"re_gating_beats_cross_{config}", f"RE ({config}): the gating decoder restores a sentence "
                       "better than the cross-attention decoder (mean pooling, ROUGE-L)", "RE table 2",
                       cell(config, "mean", "cross"), cell(config, "mean", "gating")),
            Comparison(f"re_cross_beats_input_{config}", f"RE ({config}): the cross-attention decoder restores a "
                       "sentence better than the embedding as decoder input (mean pooling, ROUGE-L)", "RE table 2",
                       cell(config, "mean", "input"), cell(config, "mean", "cross")),
        ]
    return tuple(out)


def _re_downstream_findings() -> tuple[NoLoss, ...]:
    """RE §1 / appendix E (contribution 2): restoration training keeps the embedding's downstream
    accuracy, per task of table 10, for configuration (a) (no new layers) and (d) (3 new layers,
    frozen encoder), each against the untrained encoder of its depth ('random initialize'); one
    sentence. (The paper's own (a) rows sit 4-8 points below its 'random initialize' one.)"""
    out = []
    for task in RE_TASKS:
        for config, row, reference in (("a", "grad|1|0", "pretrained|0"), ("d", "freeze|1|3", "pretrained|3")):
            out.append(NoLoss(f"re_keeps_{task}_{config}", f"RE ({config}): restoration training (1 sentence) keeps "
                              f"{task} accuracy: not below the untrained encoder's beyond the 95% intervals",
                              "RE §1, appendix E (table 10)", Cell(TABLE10, reference, task), Cell(TABLE10, row, task)))
    return tuple(out)


RE_FINDINGS: tuple[Comparison | NoLoss, ...] = (
    *_re_restoration_findings(),
    # §4.4 on table 4; R@1 (table 9) because R@20 / R@100 need more than the 20 candidates a tiny run's query has
    Comparison("re_restoration_helps_retrieval", "RE: an encoder trained to restore sentences ((a), 1 sentence) "
               "retrieves better than the pretrained encoder without restoration training (R@1)",
               "RE table 4 (R@1: table 9)", Cell(TABLE9, "pretrained|0", "r@1"), Cell(TABLE9, "grad|1|0", "r@1")),
    *_re_downstream_findings(),
)

FINDINGS: tuple[Finding, ...] = (
    # §5.1: "the BLEU value is higher than 0.99 when r >= 0.1" (0-1 scale; the report's BLEU is 0-100)
    Level("nugget_ae_reconstructs", "Nugget AE reconstructs its input nearly verbatim from r = 0.1 (BLEU > 99)",
          "Nugget fig. 4 (§5.1)", Cell("nugget_fig4", "ae_r>=0.1", "bleu"), 99.0, strict=True),
    # fig. 4's AE line rises with r: the lowest vs the highest ratio one training budget measured (the sweep's)
    Comparison("nugget_ae_bleu_rises_with_ratio", "Nugget AE reconstructs better at a larger ratio (BLEU)",
               "Nugget fig. 4", Cell("nugget_fig4", LOWEST_RATIO_AE, "bleu"), Cell("nugget_fig4", HIGHEST_RATIO_AE, "bleu")),
    Comparison("nugget_avoids_the", "'the' is rarer among AE nuggets than in the text", "Nugget fig. 5",
               Cell("nugget_fig5", "the_ae", "share_nuggets"), Cell("nugget_fig5", "the_ae", "share_text")),
    Comparison("nugget_beats_tsdae_pi", "Nugget MT (r = 0.1) beats TSDAE MT on paraphrase identification",
               "Nugget table 2", Cell("nugget_table2", "tsdae_mt", "pi"), Cell("nugget_table2", "nugget_mt_0.1", "pi")),
    Comparison("nugget_beats_tsdae_rr", "Nugget MT (r = 0.1) beats TSDAE MT on reranking",
               "Nugget table 2", Cell("nugget_table2", "tsdae_mt", "rr"), Cell("nugget_table2", "nugget_mt_0.1", "rr")),
    Comparison("scorer_layer_3_beats_0", "the scorer reading layer 3 beats one reading the embeddings (l = 0) on PI",
               "Nugget table 4", Cell("nugget_table4", "l=0", "pi"), Cell("nugget_table4", "l=3", "pi")),
    Comparison("learned_beats_chunking", "learned nuggets beat fixed chunking on reranking",
               "Nugget table 4", Cell("nugget_table4", "chunk", "rr"), Cell("nugget_table4", "l=3", "rr")),
    Comparison("nugget_lm_history_helps", "a Nugget LM reading 8 segments of history through nuggets has lower "
               "perplexity than the Transformer LM without history", "Nugget table 3",
               Cell("nugget_table3", "nugget_0.1", "h=8"), Cell("nugget_table3", "transformer", "h=0")),
    Comparison("nugget_lm_beats_tsdae", "with 8 segments of history, Nugget memory beats TSDAE memory (perplexity)",
               "Nugget table 3", Cell("nugget_table3", "nugget_0.1", "h=8"), Cell("nugget_table3", "tsdae", "h=8")),
    Comparison("nugget2d_beats_compressive_lm", "Nugget2D has lower perplexity than Compressive at the same "
               "budget (64 KV states)", "Nugget2D table 1",
               Cell("nugget2d_table1", "nugget2d_64", "wikitext_subword"),
               Cell("nugget2d_table1", "compressive_64", "wikitext_subword")),
    Comparison("nugget2d_qa_beats_lmsumm", "Nugget2D (10x) answers more questions than LMSumm at the same ratio",
               "Nugget2D table 3", Cell("nugget2d_table3", "lmsumm_10x", "accuracy"),
               Cell("nugget2d_table3", "nugget2d_10x", "accuracy")),
    Comparison("nugget2d_qa_uses_document", "Nugget2D (10x) answers more questions than the LM without the document",
               "Nugget2D table 3", Cell("nugget2d_table3", "nodoc", "accuracy"),
               Cell("nugget2d_table3", "nugget2d_10x", "accuracy")),
    Comparison("nugget2d_summaries_beat_zero_shot", "fine-tuned Nugget2D (10x) summarises better than the zero-shot "
               "full LM (ROUGE-L)", "Nugget2D table 4", Cell("nugget2d_table4", "full_zs", "rougeL"),
               Cell("nugget2d_table4", "nugget2d_10x", "rougeL")),
    Comparison("nugget2d_beats_icae", "Nugget2D reconstructs better than ICAE at the same ratio (r = 0.1, BLEU)",
               "Nugget2D §4", Cell("nugget2d_autoencoding", "icae_0.1", "bleu"),
               Cell("nugget2d_autoencoding", "nugget2d_0.1", "bleu")),
    *RE_FINDINGS,
)


def judge(tables: Sequence[ReportTable], findings: Sequence[Finding] = FINDINGS) -> list[Verdict]:
    by_id = {t.id: t for t in tables}
    return [f.judge(by_id) for f in findings]


def counts(verdicts: Sequence[Verdict]) -> dict[str, int]:
    """``{"findings_shown": ..., "findings_not_shown": ..., "findings_not_measurable": ...,
    "findings_degenerate": ...}``: ``findings_not_shown`` counts the degenerate ones too."""
    out = {f"findings_{v.replace(' ', '_')}": sum(x.verdict == v for x in verdicts)
           for v in (SHOWN, NOT_SHOWN, NOT_MEASURABLE)}
    degenerate = sum(x.verdict == DEGENERATE for x in verdicts)
    return {**out, "findings_not_shown": out["findings_not_shown"] + degenerate, "findings_degenerate": degenerate}
