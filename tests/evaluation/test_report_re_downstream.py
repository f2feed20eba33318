"""RE table 10 in the report: the published SST-2 / SST / TREC cells as printed (the OCR's lost
rows marked unreadable), measured accuracies with their n and Wilson intervals beside them from a
fake ``eval_re_downstream`` output, and the finding that restoration training keeps accuracy."""

from __future__ import annotations

from stages.artifacts.evaluate import NOT_RUN, Column, EvalTable, TableRow
from stages.common.intervals import share_interval
from stages.report.findings import DEGENERATE, NOT_MEASURABLE, NOT_SHOWN, judge
from stages.report.published import PUBLISHED, SOURCES, UNREADABLE
from stages.report.re_tables import downstream_table
from tests.evaluation.fixtures import stored_table
from tests.evaluation.test_report_re import _run_report, _section

STAND_IN = "sentences of gensim_wiki, python_docs labelled by source; stand-in for TREC"


def test_published_table10_as_printed():
    t10 = PUBLISHED["re_table10"]
    assert len(t10) == 14 and "re_table10" in SOURCES
    assert t10["pretrained|0"] == {"sst2": 91.28, "sst5": 85.42, "trec_coarse": 97.02, "trec_fine": 85.91}
    assert t10["grad|1|0"] == {"sst2": 86.93, "sst5": 77.90, "trec_coarse": 93.85, "trec_fine": 78.17}
    assert t10["freeze|5|3"] == {"sst2": 91.97, "sst5": 86.50, "trec_coarse": 96.43, "trec_fine": 91.67}
    assert t10["grad|1|3"] == {"sst2": 87.16, "sst5": 76.54, "trec_coarse": 92.66, "trec_fine": 83.13}
    # no line of the OCR reaches the last two rows: unreadable, never guessed
    assert all(set(t10[row].values()) == {UNREADABLE} for row in ("grad|3|3", "grad|5|3"))
    assert set(t10) == set(PUBLISHED["re_table9"])  # the same rows as table 9


def _row(paper_row: str, accuracy: dict[str, tuple[int, int]], flag: str = "") -> TableRow:
    """An eval_re_downstream row: per task (correct, n)."""
    metrics: dict[str, float | None] = {}
    for task, (hits, n) in accuracy.items():
        metrics |= {task: 100 * hits / n, f"n_{task}": n, f"l2_{task}": 1e-3}
    return TableRow(paper_row.replace("|", "_"), metrics, paper_row=paper_row, flag=flag,
                    interval={t: share_interval(100 * h / n, n) for t, (h, n) in accuracy.items()})


def _stage(root, rows) -> dict:
    from tests.evaluation.fixtures import artifact

    (root / "eval_re_downstream").mkdir()
    EvalTable("t10", [Column(t, t) for t in ("trec_coarse", "trec_fine")], rows, stand_in=STAND_IN).write(
        root / "eval_re_downstream")
    return {"eval_re_downstream": artifact("eval_re_downstream", root / "eval_re_downstream")}


def test_table10_measured_beside_published(tmp_path):
    rows = [_row("pretrained|0", {"trec_coarse": (180, 200), "trec_fine": (120, 200)}),
            _row("grad|1|0", {"trec_coarse": (176, 200), "trec_fine": (60, 200)})]
    table = downstream_table(stored_table("eval_re_downstream", _stage(tmp_path, rows)["eval_re_downstream"].path),
                             "ctx")
    assert table.stand_in == STAND_IN and table.columns == ["sst2", "sst5", "trec_coarse", "trec_fine"]
    cells = {label: (m, p) for label, m, p in table.rows}
    untrained = next(v for k, v in cells.items() if k.endswith("[pretrained_0]"))
    low, high = share_interval(90.0, 200)
    assert untrained[0]["trec_coarse"] == f"90.00 [{low:.2f}, {high:.2f}] (n=200)" and untrained[1]["trec_coarse"] == 97.02
    assert untrained[0]["sst2"] == NOT_RUN and untrained[1]["sst2"] == 91.28  # the stand-in has no SST
    lost = cells["(c) pretrained layers updated + 3 new layers, restoration-trained on 3 sentences"]
    assert set(lost[1].values()) == {UNREADABLE} and set(lost[0].values()) == {NOT_RUN}
    assert len(table.rows) == 14 and table.problems() == []


def test_the_keeps_accuracy_finding(tmp_path):
    from stages.report.findings import RE_FINDINGS, TOO_FEW

    rows = [_row("pretrained|0", {"trec_coarse": (180, 200), "trec_fine": (120, 200)}),
            _row("grad|1|0", {"trec_coarse": (176, 200), "trec_fine": (60, 200)}),  # coarse within, fine far below
            _row("pretrained|3", {"trec_coarse": (100, 200), "trec_fine": (50, 200)}),
            _row("freeze|1|3", {"trec_coarse": (150, 200), "trec_fine": (50, 200)}, flag="trec_fine: predicts 'x'")]
    table = downstream_table(stored_table("eval_re_downstream", _stage(tmp_path, rows)["eval_re_downstream"].path),
                             "ctx")
    verdicts = {v.finding: v for v in judge([table], RE_FINDINGS)}
    # 2 points below on 200 sentences: the difference's interval straddles the 3-point margin, so it cannot tell
    assert verdicts["re_keeps_trec_coarse_a"].verdict == TOO_FEW
    assert "(straddles -3)" in verdicts["re_keeps_trec_coarse_a"].evidence
    assert verdicts["re_keeps_trec_fine_a"].verdict == NOT_SHOWN
    assert verdicts["re_keeps_trec_fine_d"].verdict == DEGENERATE  # a constant probe measures nothing
    assert verdicts["re_keeps_sst2_a"].verdict == NOT_MEASURABLE


def test_the_report_shows_table10(evaluated, tmp_path):
    rows = [_row("pretrained|0", {"trec_coarse": (180, 200), "trec_fine": (120, 200)}),
            _row("grad|1|0", {"trec_coarse": (176, 200), "trec_fine": (110, 200)})]
    _, md = _run_report(evaluated, tmp_path, _stage(tmp_path, rows))
    heading, t10 = _section(md, "RE table 10")
    assert heading.endswith(f"[stand-in data: {STAND_IN}]") and "the paper states no protocol" in heading
    assert "measured by stage eval_re_downstream (key key-eval_re_downstream)" in md
    assert "data.re_downstream.source = stand_in" in md
    grad = next(cells for label, cells in t10.items() if label.endswith("[grad_1_0]"))
    assert grad[4].endswith("(n=200)") and grad[5] == "93.85" and grad[0] == NOT_RUN and grad[1] == "86.93"
    settings = list(_section(md, "Differences from the papers' setups")[1])
    assert any(s.startswith("eval_re_downstream") for s in settings) and "data.re_downstream.source" in settings
