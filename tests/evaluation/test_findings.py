"""The findings (stages.report.findings, stages.report.verdicts): paired differences over the
independent units, non-inferiority with a margin, competence floors, too few units, the
same-budget rule, the paper's strict bound, fig. 4's lowest-vs-highest-ratio comparison."""

from __future__ import annotations

import numpy as np
import pytest

from stages.common.floors import Floor
from stages.common.resampling import MIN_UNITS, UnitSample
from stages.report.findings import (
    DEGENERATE,
    FINDINGS,
    NO_TASK,
    NOT_MEASURABLE,
    NOT_SHOWN,
    RE_NO_LOSS_MARGIN,
    RULES,
    SHOWN,
    TOO_FEW,
    VERDICTS,
    Cell,
    Comparison,
    Level,
    NoLoss,
    judge,
)
from stages.report.re_tables import TABLE10
from stages.report.tables import ReportTable


def _per_doc(values: np.ndarray, ids=None, unit: str = "document") -> UnitSample:
    """One value per unit (a mean: [value, 1])."""
    return UnitSample.of(unit, "ratio", list(ids if ids is not None else range(len(values))),
                         np.c_[values, np.ones(len(values))])


def _add(t: ReportTable, label: str, row: str, sample: UnitSample, column: str = "x", **kw) -> None:
    t.add(label, {column: sample.value()}, row, n=sample.n, bounds={column: sample.interval()},
          units={column: sample}, **kw)


def _finding(id_: str):
    return next(f for f in FINDINGS if f.id == id_)


def test_every_verdict_has_its_rule_in_the_legend():
    assert set(RULES) == set(VERDICTS)


def test_a_comparison_pairs_the_units_both_systems_were_scored_on():
    """Two systems on the same 40 documents: each document's difficulty dwarfs the systems' gap, so
    their own intervals overlap, but every document is a little better under B: the paired interval
    of the difference shows it. The same numbers on different documents cannot."""
    rng = np.random.default_rng(0)
    hard = rng.gamma(1.0, 20.0, 40)
    a, b = _per_doc(hard), _per_doc(hard + 1.0 + rng.normal(0, 0.3, 40))
    t = ReportTable("t", "T", "", ["x"])
    _add(t, "A", "a", a)
    _add(t, "B", "b", b)
    _add(t, "B elsewhere", "b2", _per_doc(b.stats[:, 0], ids=range(100, 140)))
    assert t.values("a", "x")[0].high > t.values("b", "x")[0].low  # the cells' own intervals overlap
    got = {v.finding: v for v in judge([t], [Comparison("ab", "A below B", "p", Cell("t", "a", "x"), Cell("t", "b", "x")),
                                             Comparison("ba", "B below A", "p", Cell("t", "b", "x"), Cell("t", "a", "x")),
                                             Comparison("ab2", "A below B", "p", Cell("t", "a", "x"),
                                                        Cell("t", "b2", "x"))])}
    assert got["ab"].verdict == SHOWN and "(paired bootstrap over 40 documents)" in got["ab"].evidence
    assert got["ba"].verdict == NOT_SHOWN and got["ba"].evidence.endswith("(not the paper's direction)")
    assert got["ab2"].verdict == NOT_SHOWN and "(independent bootstrap over 40 documents)" in got["ab2"].evidence


def test_too_few_units_is_its_own_verdict():
    t = ReportTable("t", "T", "", ["x"])
    few = MIN_UNITS - 1
    _add(t, "A", "a", _per_doc(np.arange(few, dtype=float)))
    _add(t, "B", "b", _per_doc(np.arange(few, dtype=float) + 100))
    t.add("C", {"x": 500.0}, "c", n=10, se={"x": 0.1})  # an interval, but no per-unit statistics
    got = {v.finding: v for v in judge([t], [Comparison("ab", "", "p", Cell("t", "a", "x"), Cell("t", "b", "x")),
                                             Comparison("ac", "", "p", Cell("t", "a", "x"), Cell("t", "c", "x")),
                                             Comparison("ae", "", "p", Cell("t", "a", "x"), Cell("t", "e", "x"))])}
    assert got["ab"].verdict == TOO_FEW and f"{few} documents, fewer than the {MIN_UNITS}" in got["ab"].evidence
    assert got["ac"].verdict == TOO_FEW and "no per-unit statistics and no interval behind A" in got["ac"].evidence
    assert (got["ae"].verdict, got["ae"].evidence) == (NOT_MEASURABLE, "absent from this run: t e x")


def _bleu_table(nugget2d: float, icae: float, docs: int = 40) -> ReportTable:
    """Nugget2D §4's cells as eval_nugget2d_ae fills them, with the reconstruction floor (BLEU 10)."""
    floor = Floor(10.0, True, "BLEU 10, above the best constant output's 0.80")
    t = ReportTable("nugget2d_autoencoding", "AE", "", ["bleu"])
    rng = np.random.default_rng(1)
    for label, row, level in (("icae r0.1", "icae_0.1", icae), ("nugget2d r0.1", "nugget2d_0.1", nugget2d)):
        sample = _per_doc(level + rng.normal(0, 0.2, docs))
        _add(t, label, row, sample, "bleu", floors={"bleu": floor})
    return t


def test_a_bleu_one_pair_is_not_measurable_at_this_scale():
    """'Nugget2D reconstructs better than ICAE' at BLEU 1.08 vs 0.66: neither reconstructs (the floor is
    BLEU 10), so no verdict on the method: not measurable at this scale, not 'shown'."""
    finding = _finding("nugget2d_beats_icae")
    low = judge([_bleu_table(1.08, 0.66)], [finding])[0]
    assert low.verdict == NO_TASK
    assert "not beyond the floor > 10 (BLEU 10" in low.evidence and "(n=40 documents)" in low.evidence
    # one system above the floor: the comparison is judged
    assert judge([_bleu_table(40.0, 0.66)], [finding])[0].verdict == SHOWN


def test_the_bleu_one_pair_of_a_tiny_run_is_not_shown_on_its_cells_alone():
    """The tiny run's cells as the old report held them (8 document x length pairs, bootstrap bounds, no floor, no
    per-unit statistics): the old rule called it shown; 8 units are fewer than an interval needs."""
    t = ReportTable("nugget2d_autoencoding", "AE", "", ["bleu"])
    t.add("icae r0.1", {"bleu": 0.66}, "icae_0.1", n=8, bounds={"bleu": (0.33, 0.81)})
    t.add("nugget2d r0.1", {"bleu": 1.08}, "nugget2d_0.1", n=8, bounds={"bleu": (0.82, 1.34)})
    assert judge([t], [_finding("nugget2d_beats_icae")])[0].verdict != SHOWN


def test_a_model_that_ignores_its_input_is_below_every_floor():
    t = _bleu_table(40.0, 30.0)
    for _, _, v in t.numbers:
        object.__setattr__(v, "ignores_input", "ignores its input: dev loss 6.691 with its own, 6.691 with another's")
    verdict = judge([t], [_finding("nugget2d_beats_icae")])[0]
    assert verdict.verdict == NO_TASK and "ignores its input" in verdict.evidence


def test_degenerate_flag_when_one_system_does_the_task():
    t = ReportTable("nugget2d_autoencoding", "AE", "", ["bleu"])
    floor = {"bleu": Floor(10.0, True, "BLEU 10")}
    _add(t, "icae r0.1", "icae_0.1", _per_doc(np.full(20, 5.0)), "bleu", floors=floor, flag="constant output")
    _add(t, "nugget2d r0.1", "nugget2d_0.1", _per_doc(np.full(20, 50.0)), "bleu", floors=floor)
    verdict = judge([t], [_finding("nugget2d_beats_icae")])[0]
    assert verdict.verdict == DEGENERATE and "icae r0.1 is uninformative: constant output" in verdict.evidence


def _table10(reference: float, kept: float, n: int) -> ReportTable:
    """RE table 10's TREC-coarse cells: the untrained encoder and configuration (a), right on the same ``n`` test
    sentences in the proportions given, the two disagreeing on about 15% of them (as two probes of similar
    accuracy do)."""
    t = ReportTable(TABLE10, "RE table 10", "", ["trec_coarse"])
    ref_right, kept_right = round(reference / 100 * n), round(kept / 100 * n)
    both = min(ref_right, kept_right) - round(0.075 * n)  # right under both encoders
    ref_hits = np.zeros(n)
    ref_hits[:ref_right] = 100.0
    kept_hits = np.zeros(n)
    kept_hits[:both] = 100.0  # the shared right answers, then the kept encoder's own, after the reference's
    kept_hits[ref_right : ref_right + kept_right - both] = 100.0
    for label, row, hits in (("pretrained_0", "pretrained|0", ref_hits), ("n1_a_mean_gating", "grad|1|0", kept_hits)):
        _add(t, label, row, _per_doc(hits, unit="sentence"), "trec_coarse")
    return t


@pytest.mark.parametrize(("reference", "kept", "n", "verdict"), [
    (60.0, 47.0, 194, NOT_SHOWN),  # a 13-point loss at the tiny run's n is a loss, not "keeps accuracy"
    (60.0, 59.0, 194, TOO_FEW),  # 1 point below: at n = 194 the interval reaches past -3 either way
    (60.0, 59.5, 4000, SHOWN),  # 0.5 below on 4000 sentences: the interval lies above -3
    (60.0, 62.0, 4000, SHOWN),
])
def test_no_loss_is_non_inferiority_with_a_margin(reference, kept, n, verdict):
    finding = _finding("re_keeps_trec_coarse_a")
    assert isinstance(finding, NoLoss) and finding.margin == RE_NO_LOSS_MARGIN
    got = judge([_table10(reference, kept, n)], [finding])[0]
    assert got.verdict == verdict, got.evidence
    assert f"margin {RE_NO_LOSS_MARGIN:g}" in got.evidence and "paired bootstrap over" in got.evidence


def test_a_13_point_loss_on_the_cells_alone_is_not_no_loss():
    """The same loss where the cells carry only their Wilson intervals (no per-unit statistics): the
    difference's interval (normal approximation of two independent proportions) lies below -3, a loss. The
    overlap rule this replaced called it 'shown' (the kept encoder's upper bound reached the reference's lower)."""
    from stages.common.intervals import share_interval

    t = ReportTable(TABLE10, "RE table 10", "", ["trec_coarse"])
    t.add("pretrained_0", {"trec_coarse": 60.0}, "pretrained|0", n=194, bounds={"trec_coarse": share_interval(60.0, 194)})
    t.add("n1_a_mean_gating", {"trec_coarse": 47.0}, "grad|1|0", n=194,
          bounds={"trec_coarse": share_interval(47.0, 194)})
    got = judge([t], [_finding("re_keeps_trec_coarse_a")])[0]
    assert got.verdict == NOT_SHOWN, got.evidence


def test_no_loss_of_a_system_that_did_not_learn_its_training_task_is_not_measurable():
    """'Restoration training keeps accuracy' says nothing where the restoration model ignores the embedding."""
    t = _table10(60.0, 62.0, 4000)
    kept = t.values("grad|1|0", "trec_coarse")[0]
    object.__setattr__(kept, "ignores_input", "restoration training did not use the embedding")
    got = judge([t], [_finding("re_keeps_trec_coarse_a")])[0]
    assert got.verdict == NO_TASK and "did not use the embedding" in got.evidence


def test_no_loss_needs_a_positive_margin():
    with pytest.raises(ValueError, match="margin 0"):
        NoLoss("x", "", "", Cell("t", "a", "x"), Cell("t", "b", "x"), 0, "")


def test_findings_compare_systems_of_one_training_budget():
    """A published row measured on systems of two budgets (the sweep's model, train_baselines' nugget_mt):
    a comparison takes the pair trained alike, or none."""
    t = ReportTable("t", "T", "", ["x"])
    for label, row, level, budget in (("sweep l=3", "ref", 9.0, "200k steps"), ("nugget_mt", "ref", 5.0, "20k steps"),
                                      ("chunk", "chunk", 4.0, "20k steps"), ("alone", "alone", 1.0, "1k steps")):
        _add(t, label, row, _per_doc(np.full(20, level) + np.linspace(0, 0.1, 20)), budget=budget)
    same = Comparison("same", "chunk below ref", "p", Cell("t", "chunk", "x"), Cell("t", "ref", "x"))
    none = Comparison("none", "alone below ref", "p", Cell("t", "alone", "x"), Cell("t", "ref", "x"))
    got = {v.finding: v for v in judge([t], [same, none])}
    assert got["same"].evidence.startswith("chunk 4.05 [") and " vs nugget_mt 5.05 [" in got["same"].evidence
    assert got["same"].verdict == SHOWN
    assert got["none"].verdict == NOT_MEASURABLE
    assert got["none"].evidence.startswith("no pair of systems trained with the same budget (alone: 1k steps; ")


def test_paper_bound_is_strict_and_needs_the_interval_above_it():
    """Nugget §5.1: BLEU "higher than 0.99" from r = 0.1: 99 itself does not reach it, nor does a value whose
    interval reaches below."""
    finding = _finding("nugget_ae_reconstructs")
    assert isinstance(finding, Level) and (finding.at_least, finding.strict) == (99.0, True)
    for values, verdict in ((np.full(20, 99.0), NOT_SHOWN), (np.full(20, 99.5), SHOWN),
                            (np.r_[np.full(14, 100.0), np.full(6, 97.8)], NOT_SHOWN), (np.full(5, 99.5), TOO_FEW)):
        t = ReportTable("nugget_fig4", "F4", "", ["bleu"])
        _add(t, "AE r=0.1", "ae_r>=0.1", _per_doc(values), "bleu")
        assert judge([t], [finding])[0].verdict == verdict, values
