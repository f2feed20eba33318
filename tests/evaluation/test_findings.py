"""The findings (stages.report.findings): verdicts on measured cells and their intervals, the
same-budget rule, the paper's strict bound, fig. 4's lowest-vs-highest-ratio comparison."""

from __future__ import annotations

from stages.report.findings import FINDINGS, NOT_SHOWN, SHOWN, Cell, Comparison, Level, judge
from stages.report.tables import ReportTable


def test_findings_verdicts():
    t = ReportTable("t", "T", "", ["x"])
    t.add("A", {"x": 1.0}, "a", n=10, se={"x": 0.1})
    t.add("B", {"x": 2.0}, "b", n=10, se={"x": 0.1})
    t.add("C", {"x": 1.1}, "c", n=10, se={"x": 0.2})
    t.add("D", {"x": 3.0}, "d", n=10)
    lower = Comparison("ab", "a below b", "p", Cell("t", "a", "x"), Cell("t", "b", "x"))
    reverse = Comparison("ba", "b below a", "p", Cell("t", "b", "x"), Cell("t", "a", "x"))
    overlap = Comparison("ac", "a below c", "p", Cell("t", "a", "x"), Cell("t", "c", "x"))
    point = Comparison("ad", "a below d", "p", Cell("t", "a", "x"), Cell("t", "d", "x"))
    missing = Comparison("ae", "a below e", "p", Cell("t", "a", "x"), Cell("t", "e", "x"))
    level = Level("lv", "b at least 1.5", "p", Cell("t", "b", "x"), 1.5)
    got = {v.finding: (v.verdict, v.evidence) for v in judge([t], [lower, reverse, overlap, point, missing, level])}
    assert got["ab"][0] == SHOWN and got["ba"][0] == NOT_SHOWN and got["lv"][0] == SHOWN
    assert got["ac"] == (NOT_SHOWN, "A 1.00 ± 0.20 (n=10) vs C 1.10 ± 0.39 (n=10) (difference within the 95% intervals)")
    assert got["ad"] == (NOT_SHOWN, "A 1.00 ± 0.20 (n=10) vs D 3.00 (n=10) (the paper's direction, but without an "
                                    "interval: not told from noise)")
    assert got["ae"] == ("not measurable", "absent from this run: t e x")


def test_findings_compare_systems_of_one_training_budget():
    """A published row measured on systems of two budgets (the sweep's model, train_baselines' nugget_mt):
    a comparison takes the pair trained alike, or none."""
    t = ReportTable("t", "T", "", ["x"])
    t.add("sweep l=3", {"x": 9.0}, "ref", n=10, se={"x": 0.1}, budget="200k steps")
    t.add("nugget_mt", {"x": 5.0}, "ref", n=10, se={"x": 0.1}, budget="20k steps")
    t.add("chunk", {"x": 4.0}, "chunk", n=10, se={"x": 0.1}, budget="20k steps")
    t.add("alone", {"x": 1.0}, "alone", n=10, se={"x": 0.1}, budget="1k steps")
    same = Comparison("same", "chunk below ref", "p", Cell("t", "chunk", "x"), Cell("t", "ref", "x"))
    none = Comparison("none", "alone below ref", "p", Cell("t", "alone", "x"), Cell("t", "ref", "x"))
    got = {v.finding: v for v in judge([t], [same, none])}
    assert got["same"].evidence == "chunk 4.00 ± 0.20 (n=10) vs nugget_mt 5.00 ± 0.20 (n=10)"
    assert got["none"].verdict == "not measurable"
    assert got["none"].evidence.startswith("no pair of systems trained with the same budget (alone: 1k steps; ")


def test_paper_bound_is_strict():
    """Nugget §5.1: BLEU "higher than 0.99" from r = 0.1: 99 itself does not reach it."""
    finding = next(f for f in FINDINGS if f.id == "nugget_ae_reconstructs")
    assert (finding.at_least, finding.strict) == (99.0, True)
    for bleu, verdict in ((99.0, NOT_SHOWN), (99.2, SHOWN)):
        t = ReportTable("nugget_fig4", "F4", "", ["bleu"])
        t.add("AE r=0.1", {"bleu": bleu}, "ae_r>=0.1", n=128)
        assert judge([t], [finding])[0].verdict == verdict


def _fig4_rows(low: tuple[float, float, float], high: tuple[float, float, float], flag: str = "") -> list[dict]:
    """eval_reconstruction's records: the sweep's AE models at r = 0.05 / 0.1 / 0.25 (``low`` / ``high``: BLEU,
    interval low, high of the lowest / highest ratio), train_nugget's at a higher ratio of another budget, and
    models off fig. 4's AE line (MT, another scorer layer) at the extremes."""
    def row(label: str, ratio: float, bleu: tuple[float, float, float], source: str = "sweep_nugget", **over) -> dict:
        return {"label": label, "kind": "nugget", "objective": "ae", "scorer_layer": 2, "ratio": ratio,
                "source": source, "n_docs": 8, "bleu": bleu[0], "bleu_low": bleu[1], "bleu_high": bleu[2], **over}
    return [row("AE r=0.05", 0.05, low, uninformative=flag), row("AE r=0.1", 0.1, (30.0, 20.0, 40.0)),
            row("AE r=0.25", 0.25, high), row("AE r=0.5 [train_nugget]", 0.5, (99.0, 98.0, 100.0), "train_nugget"),
            row("MT r=0.01", 0.01, (1.0, 0.5, 1.5), objective="mt"), row("AE r=0.9 l=3", 0.9, (1.0, 0.5, 1.5),
                                                                          scorer_layer=3)]


def test_fig4_finding_compares_the_lowest_and_highest_ratio_of_one_budget():
    """Nugget fig. 4: AE BLEU rises with r. The finding sets the sweep's lowest-ratio AE model against its
    highest (train_nugget's larger ratio is another budget), at the default scorer layer, on their bootstrap
    intervals."""
    from stages.nugget.artifacts.results import ReconstructionResults
    from stages.report.findings import DEGENERATE
    from stages.report.tables import bleu_table

    finding = next(f for f in FINDINGS if f.id == "nugget_ae_bleu_rises_with_ratio")
    budgets = {"sweep_nugget": "50 steps", "train_nugget": "200 steps"}

    def judged(rows: list[dict]):
        table = bleu_table(ReconstructionResults(rows, "dev", 5), "ctx", layer=2, budgets=budgets)
        return table, judge([table], [finding])[0]

    table, shown = judged(_fig4_rows((10.0, 5.0, 15.0), (60.0, 50.0, 70.0)))
    assert shown.verdict == SHOWN
    assert shown.evidence == "AE r=0.05 10.00 [5.00, 15.00] (n=8) vs AE r=0.25 60.00 [50.00, 70.00] (n=8)"
    assert dict((label, m["bleu"]) for label, m, _ in table.rows)["AE r=0.25"] == "60.00 [50.00, 70.00] (n=8)"
    _, overlap = judged(_fig4_rows((10.0, 5.0, 55.0), (60.0, 50.0, 70.0)))
    assert (overlap.verdict, overlap.evidence.endswith("(difference within the 95% intervals)")) == (NOT_SHOWN, True)
    _, flagged = judged(_fig4_rows((10.0, 5.0, 15.0), (60.0, 50.0, 70.0), flag="constant outputs"))
    assert flagged.verdict == DEGENERATE and "AE r=0.05 is uninformative: constant outputs" in flagged.evidence
    # one ratio per budget: nothing to compare
    _, alone = judged([r for r in _fig4_rows((10.0, 5.0, 15.0), (60.0, 50.0, 70.0)) if r["ratio"] in (0.1, 0.5)])
    assert alone.verdict == "not measurable"
