"""The RE paper's tables in the report: published numbers as printed, measured cells from fake
``eval_re_restoration`` / ``eval_re_retrieval`` outputs beside them, the RE findings, and the
report without the RE stages."""

from __future__ import annotations

import re

import pytest

from stages.artifacts.evaluate import NOT_RUN, Column, EvalTable, TableRow
from stages.corpora.artifacts import CorpusStatistics
from stages.framework.stage import Artifact
from stages.report.findings import NOT_MEASURABLE, NOT_SHOWN, RE_FINDINGS, SHOWN
from stages.report.published import PUBLISHED, SOURCES, UNREADABLE
from stages.report.re_tables import restoration_tables, retrieval_table
from stages.report.report import Report
from stages.report.tables import NOT_IN_PAPER
from tests.evaluation.fixtures import artifact, context, stored_table

# RE table 3 as printed (mean pooling): decoder, configuration, sentences -> PPL, R-1, R-2, R-L
TABLE3 = {
    ("cross", "c", 1): (1.12, 94.13, 86.26, 91.62), ("cross", "c", 3): (1.89, 63.08, 29.25, 46.87),
    ("cross", "c", 5): (2.80, 52.35, 15.09, 31.28), ("cross", "d", 1): (1.29, 87.18, 73.07, 83.79),
    ("cross", "d", 3): (2.48, 59.00, 24.39, 44.09), ("cross", "d", 5): (3.50, 51.30, 14.58, 31.00),
    ("gating", "c", 1): (1.03, 98.32, 96.30, 97.91), ("gating", "c", 3): (1.37, 72.11, 50.45, 64.16),
    ("gating", "c", 5): (2.08, 52.82, 18.91, 36.77), ("gating", "d", 1): (1.09, 95.95, 91.07, 95.04),
    ("gating", "d", 3): (1.75, 67.14, 39.97, 58.43), ("gating", "d", 5): (2.76, 52.38, 17.92, 36.83),
}
# RE table 4 as printed: configuration, sentences -> R@20, R@100 ("T5-small": the untrained rows)
TABLE4 = {
    "pretrained|0": (49.58, 67.12), "grad|1|0": (64.33, 78.34), "grad|3|0": (63.09, 78.34),
    "grad|5|0": (63.09, 77.88), "freeze|1|0": (63.61, 78.39), "freeze|3|0": (62.56, 77.71),
    "freeze|5|0": (62.18, 77.67), "pretrained|3": (55.73, 72.37), "grad|1|3": (64.07, 78.05),
    "grad|3|3": (63.13, 77.82), "grad|5|3": (63.61, 78.30), "freeze|1|3": (70.30, 83.32),
    "freeze|3|3": (68.70, 82.29), "freeze|5|3": (68.46, 82.13),
}
RESTORATION_STAND_IN = "gensim_wiki sentences (stand-in for C4 RealNewsLike)"
RETRIEVAL_STAND_IN = "build_rr tasks (gensim_wiki, 20 candidates; stand-in for Natural Questions over 21M passages)"


def test_published_re_numbers_as_printed():
    t8, t9 = PUBLISHED["re_table8"], PUBLISHED["re_table9"]
    assert len(t8) == 3 * 4 * 2 * 3 and len(t9) == 14 and {"re_table8", "re_table9"} <= set(SOURCES)
    assert t8["1|c|mean|gating"] == {"ppl": 1.03, "rouge1": 98.32, "rouge2": 96.30, "rougeL": 97.91}
    assert t8["3|a|cls|gating"] == {"ppl": 7.90, "rouge1": 18.41, "rouge2": 1.14, "rougeL": 12.72}
    assert t8["5|d|mean|input"] == {"ppl": 4.19, "rouge1": 45.31, "rouge2": 11.46, "rougeL": 27.65}
    assert t9["freeze|1|3"]["r@20"] == 70.30 and t9["pretrained|0"] == {"r@1": 14.77, "r@5": 32.68, "r@20": 49.58,
                                                                       "r@100": 67.12}
    # table 3 is table 8's (c) / (d) mean-pooling cross and gating rows; table 4 is table 9's R@20 / R@100
    for (decoder, config, k), cells in TABLE3.items():
        assert tuple(t8[f"{k}|{config}|mean|{decoder}"].values()) == cells
    for row, (r20, r100) in TABLE4.items():
        assert (t9[row]["r@20"], t9[row]["r@100"]) == (r20, r100)
    # the OCR's damaged cells are marked, never guessed
    assert t8["3|b|cls|input"]["rouge2"] == UNREADABLE
    assert [t8["5|a|mean|cross"][c] for c in ("ppl", "rouge1", "rouge2", "rougeL")] == [2.75] + [UNREADABLE] * 3
    assert t8["5|b|mean|input"]["rouge1"] == UNREADABLE and t8["5|b|mean|input"]["rouge2"] == 8.87
    assert t8["5|b|cls|cross"] == {"ppl": 8.87, "rouge1": UNREADABLE, "rouge2": UNREADABLE, "rougeL": UNREADABLE}
    assert t8["5|c|mean|input"]["rouge2"] == 12.34 and t8["5|c|mean|cross"]["rouge2"] == 15.09
    assert t8["1|a|cls|input"]["ppl"] == "6.178"  # printed with 3 decimals: shown as printed
    unreadable = sum(v == UNREADABLE for row in t8.values() for v in row.values())
    assert unreadable == 1 + 3 + 1 + 3


def _restoration_row(k: int, config: str, pooling: str, decoder: str, rouge_l: float, se: float = 0.5) -> TableRow:
    return TableRow(f"{k} sent. ({config}) {pooling} {decoder}",
                    {"ppl": 1.5, "rouge1": rouge_l + 2, "rouge2": rouge_l - 5, "rougeL": rouge_l, "n_ppl": 700,
                     "distinct": 30},
                    n=32, stderr={"rouge1": se, "rouge2": se, "rougeL": se}, paper_row=f"{k}|{config}|{pooling}|{decoder}")


def _retrieval_row(paper_row: str, r1: float) -> TableRow:
    return TableRow(f"retrieval {paper_row}", {"r@1": r1, "r@5": r1 + 20, "mrr": r1 + 10, "candidates": 20}, n=50,
                    stderr={"r@1": 2.0, "r@5": 2.0, "mrr": 1.5}, paper_row=paper_row)


def _re_stages(root) -> dict[str, Artifact]:
    """Fake RE evaluation outputs: per configuration (a) every finding's direction shown; (b)
    [CLS] above mean; (c) gating vs cross within the intervals; (d) mean gating not run."""
    rows = [_restoration_row(1, "a", "cls", "gating", 10.0), _restoration_row(1, "a", "mean", "input", 80.0),
            _restoration_row(1, "a", "mean", "cross", 85.0), _restoration_row(1, "a", "mean", "gating", 95.0),
            _restoration_row(1, "b", "cls", "gating", 60.0), _restoration_row(1, "b", "mean", "gating", 50.0),
            _restoration_row(1, "c", "mean", "cross", 90.0, se=3.0),
            _restoration_row(1, "c", "mean", "gating", 91.0, se=3.0),
            TableRow("1 sent. (d) mean gating", {}, note="out of budget", paper_row="1|d|mean|gating"),
            _restoration_row(3, "c", "mean", "gating", 40.0)]
    retrieval = [_retrieval_row("pretrained|0", 10.0), _retrieval_row("grad|1|0", 40.0),
                 TableRow("retrieval freeze|1|3", {}, note="no checkpoint", paper_row="freeze|1|3")]
    out = {}
    for stage, table_rows, keys, stand_in in (
            ("eval_re_restoration", rows, ("ppl", "rouge1", "rouge2", "rougeL"), RESTORATION_STAND_IN),
            ("eval_re_retrieval", retrieval, ("r@1", "r@5", "r@20", "r@100", "mrr"), RETRIEVAL_STAND_IN)):
        (root / stage).mkdir()
        EvalTable(stage, [Column(k, k) for k in keys], table_rows, stand_in=stand_in).write(root / stage)
        (root / stage / EvalTable.EXAMPLES).write_text('{"system": "x"}\n')
        out[stage] = artifact(stage, root / stage)
    return out


def _section(md: str, title: str) -> tuple[str, dict[str, list[str]]]:
    """The heading line of the section starting with ``title`` and its rows by label."""
    section = md.split(f"\n## {title}")[1].split("\n## ")[0]
    rows = [[c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", line.strip("|"))]
            for line in section.splitlines() if line.startswith("| ") and "measured" not in line]
    return title + section.split("\n")[0], {r[0]: r[1:] for r in rows}


def _run_report(evaluated, tmp_path, extra: dict[str, Artifact]):
    _, _, sim_ctx, rec_ctx = evaluated
    (tmp_path / "cs").mkdir()
    CorpusStatistics({"source": "gensim_lee", "documents": 3}).write(tmp_path / "cs")
    inputs = {"eval_similarity": Artifact("eval_similarity", "ks", "", sim_ctx.output_dir, {}),
              "eval_reconstruction": Artifact("eval_reconstruction", "kr", "", rec_ctx.output_dir, {}),
              "corpus_stats": artifact("corpus_stats", tmp_path / "cs"), **extra}
    ctx = context(Report, inputs, tmp_path / "report", [])
    Report().run(ctx)
    return ctx, (ctx.output_dir / "report.md").read_text()


def test_report_shows_re_tables_measured_beside_published(evaluated, tmp_path):
    ctx, md = _run_report(evaluated, tmp_path, _re_stages(tmp_path))
    heading, k1 = _section(md, "RE table 8, 1 sentence")
    assert "= RE table 2" in heading and "RE table 3's 1-sentence rows" in heading
    assert heading.endswith(f"[stand-in data: {RESTORATION_STAND_IN}]")
    # measured: ppl on its target tokens (no interval), ROUGE with n and the 95% interval; published beside
    assert k1["(a) mean pooling, gating decoder [1 sent. (a) mean gating]"] == [
        "1.50 (n=700)", "1.04", "97.00 ± 0.98 (n=32)", "97.76", "90.00 ± 0.98 (n=32)", "94.63", "95.00 ± 0.98 (n=32)",
        "96.94", "30.00 (n=32)", "not in paper"]  # distinct restorations: ours, not the paper's
    assert k1["(d) mean pooling, gating decoder [1 sent. (d) mean gating]"][::2] == ["not run: out of budget"] * 5
    assert k1["(b) [CLS], input decoder"] == [NOT_RUN, "1.79", NOT_RUN, "13.33", NOT_RUN, "0.75", NOT_RUN, "9.53",
                                              NOT_RUN, "not in paper"]
    assert len(k1) == 24 and k1["(a) [CLS], input decoder"][1] == "6.178"
    _, k3 = _section(md, "RE table 8, 3 sentences")
    assert k3["(c) mean pooling, gating decoder [3 sent. (c) mean gating]"][4:6] == ["35.00 ± 0.98 (n=32)", "50.45"]
    assert k3["(b) [CLS], input decoder"][5] == UNREADABLE
    _, k5 = _section(md, "RE table 8, 5 sentences")
    assert all(cells[::2] == [NOT_RUN] * 5 for cells in k5.values())
    assert k5["(a) mean pooling, cross decoder"][1::2] == ["2.75", UNREADABLE, UNREADABLE, UNREADABLE, "not in paper"]
    # retrieval: R@k of k >= the candidates per query is not measurable, said so; MRR is not in the paper
    heading, t9 = _section(md, "RE table 9")
    assert heading.endswith(f"[stand-in data: {RETRIEVAL_STAND_IN}]") and "RE table 4" in heading
    untrained = next(cells for label, cells in t9.items() if label.startswith("pretrained encoder, no restoration"))
    assert untrained == ["10.00 ± 3.92 (n=50)", "14.77", "30.00 ± 3.92 (n=50)", "32.68",
                         "not measurable: 20 candidates per query", "49.58",
                         "not measurable: 20 candidates per query", "67.12", "20.00 ± 2.94 (n=50)", NOT_IN_PAPER]
    frozen = next(cells for label, cells in t9.items() if label.endswith("[retrieval freeze|1|3]"))
    assert frozen[::2] == ["not run: no checkpoint"] * 5 and frozen[5] == "70.30"
    assert "profile tiny" in md and "data.re.source = gensim_wiki" in md
    assert "trained by train_nugget (AE), used as the pretrained encoder-decoder" in md
    assert "measured by stage eval_re_restoration (key key-eval_re_restoration)" in md
    # the findings, judged on these cells
    verdicts = {row[0]: row[1][1] for row in _section(md, "Findings at this scale")[1].items()}
    claims = {f.id: f.claim for f in RE_FINDINGS}
    assert verdicts[claims["re_mean_beats_cls_a"]] == SHOWN
    assert verdicts[claims["re_gating_beats_cross_a"]] == SHOWN and verdicts[claims["re_cross_beats_input_a"]] == SHOWN
    assert verdicts[claims["re_mean_beats_cls_b"]] == NOT_SHOWN  # [CLS] measured above mean
    assert verdicts[claims["re_gating_beats_cross_c"]] == NOT_SHOWN  # 91 ± 5.9 vs 90 ± 5.9
    assert verdicts[claims["re_mean_beats_cls_d"]] == NOT_MEASURABLE  # mean gating did not run
    assert verdicts[claims["re_restoration_helps_retrieval"]] == SHOWN
    # the headline names read as the cells they stand for
    assert ctx.logger.metrics["re.table8_k1.1.a.mean.gating.rougeL"] == pytest.approx(95.0)
    assert ctx.logger.metrics["re.table9.grad.1.0.r_1/n"] == 50
    # per-example outputs linked, tables written as CSV, the RE setup's differences listed
    assert "eval_re_retrieval/examples.jsonl" in md
    assert {p.name for p in (ctx.output_dir / "tables").glob("re_*.csv")} == {
        "re_table8_k1.csv", "re_table8_k3.csv", "re_table8_k5.csv", "re_table9.csv", "re_table10.csv"}
    settings = list(_section(md, "Differences from the papers' setups")[1])
    for setting in ("model.re", "data.re.source", "data.re.max_train_examples / max_words, train.re.max_steps",
                    "train.re_retrieval", "data.re_retrieval.source"):
        assert setting in settings, setting


def test_report_without_the_re_stages(evaluated, tmp_path):
    """RE stages absent: every RE table is there with its published cells, every measured cell
    says it was not run, every RE finding is not measurable."""
    ctx, md = _run_report(evaluated, tmp_path, {})
    for title, n_rows in (("RE table 8, 1 sentence", 24), ("RE table 8, 3 sentences", 24),
                          ("RE table 8, 5 sentences", 24), ("RE table 9", 14), ("RE table 10", 14)):
        heading, rows = _section(md, title)
        assert len(rows) == n_rows and "[stand-in data" not in heading
        assert all(set(cells[::2]) == {NOT_RUN} and all(cells[1::2]) for cells in rows.values()), title
    assert "measured by stage eval_re_restoration absent" in md
    verdicts = {row[0]: row[1][1] for row in _section(md, "Findings at this scale")[1].items()}
    assert all(verdicts[f.claim] == NOT_MEASURABLE for f in RE_FINDINGS) and len(RE_FINDINGS) == 13 + 8


def test_recall_bounded_by_the_candidates_is_not_measurable():
    from stages.report.re_tables import not_measurable

    assert not_measurable(TableRow("x", {"r@1": 5.0, "candidates": 20})) == {
        "r@20": "not measurable: 20 candidates per query", "r@100": "not measurable: 20 candidates per query"}
    # a whole collection of 50 passages: R@100 means nothing, R@20 does
    assert not_measurable(TableRow("x", {"r@20": 100.0, "passages": 50})) == {
        "r@100": "not measurable: 50 passages in the collection"}
    assert not_measurable(TableRow("x", {"r@20": 60.0})) == {}


def test_a_row_of_no_known_layout_is_refused(tmp_path):
    (tmp_path / "r").mkdir()
    EvalTable("R", [Column("rougeL", "R-L")], [TableRow("odd", {"rougeL": 1.0}, n=2, paper_row="1|e|mean|gating")]
              ).write(tmp_path / "r")
    with pytest.raises(ValueError, match="system 'odd' has paper_row '1|e|mean|gating'"):
        restoration_tables(stored_table("eval_re_restoration", tmp_path / "r"), "ctx")
    (tmp_path / "q").mkdir()
    EvalTable("Q", [Column("r@1", "R@1")], [TableRow("odd", {"r@1": 1.0}, n=2, paper_row="frozen|1")]
              ).write(tmp_path / "q")
    with pytest.raises(ValueError, match="system 'odd' has paper_row 'frozen|1'"):
        retrieval_table(stored_table("eval_re_retrieval", tmp_path / "q"), "ctx")


def test_a_sentence_count_not_in_the_paper_gets_its_own_table(tmp_path):
    (tmp_path / "r").mkdir()
    EvalTable("R", [Column("rougeL", "R-L")], [_restoration_row(2, "a", "mean", "gating", 70.0)]).write(tmp_path / "r")
    tables = {t.id: t for t in restoration_tables(stored_table("eval_re_restoration", tmp_path / "r"), "ctx")}
    assert list(tables) == ["re_table8_k1", "re_table8_k2", "re_table8_k3", "re_table8_k5"]
    (label, measured, published), = tables["re_table8_k2"].rows
    assert label == "(a) mean pooling, gating decoder [2 sent. (a) mean gating]"
    assert measured["rougeL"] == "70.00 ± 0.98 (n=32)" and published["rougeL"] == NOT_IN_PAPER
