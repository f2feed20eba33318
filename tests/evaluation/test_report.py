"""The report on fixture upstream artifacts: tables measured beside published, every number
with its n, stand-in labels, per-example links, figures, findings."""

from __future__ import annotations

import json
import os
import re

import pytest

from stages.artifacts.data import CorpusStatistics
from stages.artifacts.evaluate import (
    NOT_RUN,
    Column,
    EvalTable,
    SimilarityResults,
    TableRow,
)
from stages.framework.stage import Artifact
from stages.report.findings import FINDINGS, NOT_SHOWN, SHOWN, Cell, Comparison, Level, judge
from stages.report.published import PUBLISHED
from stages.report.report import Report
from stages.report.tables import NOT_IN_PAPER, ReportTable
from tests.evaluation.fixtures import artifact, context


def _cells(md: str, title: str) -> list[list[str]]:
    section = md.split(f"## {title}")[1].split("\n## ")[0]
    return [[c.strip() for c in line.strip("|").split("|")] for line in section.splitlines()
            if line.startswith("| ") and "measured" not in line]


def test_report_renders_from_fixture_artifacts(evaluated, tmp_path):
    root, _, sim_ctx, rec_ctx = evaluated
    (tmp_path / "cs").mkdir()
    CorpusStatistics({"source": "gensim_lee", "documents": 3}).write(tmp_path / "cs")
    inputs = {
        "eval_similarity": Artifact("eval_similarity", "ks", "", sim_ctx.output_dir, {}),
        "eval_reconstruction": Artifact("eval_reconstruction", "kr", "", rec_ctx.output_dir, {}),
        "corpus_stats": artifact("corpus_stats", tmp_path / "cs"),
    }
    ctx = context(Report, inputs, tmp_path / "report", [])
    Report().run(ctx)
    md = (ctx.output_dir / "report.md").read_text()
    sim = SimilarityResults.read(sim_ctx.output_dir).rows
    # every table present, no blank cell anywhere
    for title in ("Nugget figure 4", "Nugget figure 5", "Nugget appendix D", "Nugget table 2", "Nugget table 3",
                  "Nugget table 4",
                  "Nugget2D table 1", "Nugget2D table 3", "Nugget2D table 4", "Nugget2D §4 (fig. 5)", "Nugget2D §4.3"):
        rows = _cells(md, title)
        assert rows and all(all(c for c in row) for row in rows), title
    # table 2: the MT r=0.1 trials carry their measured MRR beside the paper's 96.69 / 50.04
    t2 = _cells(md, "Nugget table 2")
    mt01 = [r for r in t2 if r[0].startswith("Nugget MT r=0.1 l=0")]
    pi, se = next((x["mrr"], x["mrr_se"]) for x in sim if x["label"] == "sweep:mt-r0.1-l0" and x["task"] == "pi")
    n_pi = next(x["n_tasks"] for x in sim if x["task"] == "pi")
    # the MRR's 95% interval from its per-query standard error
    assert mt01 == [[mt01[0][0], f"{pi:.2f} ± {1.96 * se:.2f} (n={n_pi})", "96.69", mt01[0][3], "50.04"]]
    # every measured number states the n it stands on; a table of stand-in data names it in its title
    for title in ("Nugget figure 4", "Nugget table 2", "Nugget table 4"):
        measured = [c for row in _cells(md, title) for c in row[1::2] if c[:1].isdigit()]
        assert measured and all(re.fullmatch(r"[\d.]+( ± [\d.]+)? \(n=\d+\)", c) for c in measured), title
    headings = {line[3:].split(" [")[0]: line for line in md.splitlines() if line.startswith("## ")}
    assert "[stand-in data: debian_reference en-zh documents (stand-in for WMT19 en-zh)]" in headings["Nugget figure 4: " 
                                                                                                   "BLEU of texts decoded from nuggets vs ratio r"]
    data = {x["task"]: x["data"] for x in sim}
    assert f"[stand-in data: PI: {data['pi']}; RR: {data['rr']}]" in headings["Nugget table 2: PI / RR (MRR x 100)"]
    # rows the fixture never trained are marked, never filled from the paper
    ae25 = next(r for r in t2 if r[0].startswith("Nugget AE r=0.25"))
    assert ae25[2] == "92.30" and ae25[1] != "92.30"
    tsdae = next(r for r in t2 if r[0].startswith("TSDAE AE"))
    assert tsdae[1] == NOT_RUN and tsdae[2] == f"{PUBLISHED['nugget_table2']['tsdae_ae']['pi']:.2f}"
    re_row = next(r for r in t2 if "gating decoder" in r[0])
    assert re_row[2] == NOT_IN_PAPER and re_row[1] not in (NOT_RUN, NOT_IN_PAPER)
    # fig. 5 without analyze_nuggets: the paper's 'the' shares stay in the published column
    assert _cells(md, "Nugget figure 5") == [["'the' (AE)", NOT_RUN, "0.70", NOT_RUN, "5.20"]]
    # Nugget2D stages absent from this run: every measured cell says so
    for row in _cells(md, "Nugget2D table 1"):
        assert row[1::2] == [NOT_RUN] * 3
    assert "profile tiny" in md and "key ks" in md
    assert (ctx.output_dir / "report.html").exists()
    # figures are shown where their evaluation stored them (one copy), with a caption
    figure = rec_ctx.output_dir / "bleu_vs_ratio.png"
    assert not (ctx.output_dir / figure.name).exists()
    assert f"![bleu_vs_ratio.png]({os.path.relpath(figure, ctx.output_dir)})" in md
    assert "*Figure 1 (eval_reconstruction/bleu_vs_ratio.png). " in md
    # each table links the per-example outputs of the stage that measured it
    ranks = sim_ctx.output_dir / SimilarityResults.EXAMPLES
    lines = ranks.read_text().splitlines()
    assert len(lines) == len(sim) * n_pi and {"system", "task", "query", "reciprocal_rank_x100"} <= set(json.loads(lines[0]))
    section = md.split("## Nugget table 2")[1].split("\n## ")[0]
    assert f"({os.path.relpath(ranks, ctx.output_dir)})" in section
    # findings: computed from the cells, each with its verdict
    findings = {row[0]: row[2] for row in _cells(md, "Findings at this scale")[1:]}
    assert set(findings.values()) <= {"shown", "not shown", "not measurable"} and len(findings) == len(FINDINGS)
    assert findings["Nugget2D reconstructs better than ICAE at the same ratio (r = 0.1, BLEU)"] == "not measurable"
    assert ctx.logger.metrics["findings_not_measurable"] == sum(v == "not measurable" for v in findings.values())
    assert ctx.logger.metrics["nugget_table2/nugget_mt_0.1/pi"] == pytest.approx(pi)
    assert len(list((ctx.output_dir / "tables").glob("*.csv"))) == 15  # 11 Nugget / Nugget2D, 4 RE
    # every paper setting the tiny run does not follow is named, with the paper's and why
    differences = _cells(md, "Differences from the papers' setups")[1:]  # [0]: the header row
    settings = [row[0] for row in differences]
    for setting in ("model.seq2seq", "model.lm", "nugget.residual", "data.mt.source", "data.lm.source",
                    "eval.lm.baseline_adapter", "ColBART (Nugget §6.1.2)"):
        assert setting in settings, setting
    assert all(all(cell for cell in row) for row in differences)
    assert ctx.logger.metrics["paper_differences"] == len(differences)


def test_paper_profile_lists_only_what_the_code_does_not_reproduce():
    from stages.config import load_config
    from stages.report.deviations import ALWAYS, TABLE1_BUDGETS, TABLE1_FULL, deviations

    def found(overrides: list[str]) -> set[str]:
        cfg = load_config(["profile=paper", *overrides])

        def get(key: str):
            value = cfg
            for part in key.split("."):
                value = getattr(value, part)
            return value

        return {d.setting for d in deviations(get)} - {d.setting for d in ALWAYS}

    # what stays is a reading of the paper: the AR scorer's autoencoder runs on the AR model's base LM,
    # and ICAE is trained here rather than quoted
    reading = "the AR scorer's autoencoding compressor (Nugget2D §2.5)"
    icae = "ICAE (Nugget2D §4, fig. 5)"
    # and the RE models train a fixed number of steps, not RE §4.1's one epoch of C4 RealNewsLike
    steps = "data.re.max_train_examples / max_words, train.re.max_steps"
    # and one AR fit (omega_r = 64) serves table 1's 64/320/32 rows too; Full trains on whole 832-token samples
    table1 = {TABLE1_BUDGETS, TABLE1_FULL}
    assert found([]) == {reading, icae, steps, *table1}
    assert found(["train.nugget2d_ae.icae=false"]) == {reading, steps, *table1}
    # a cut of the RE grid (profile=tiny trains 8 of the 72 models) is named
    assert found(["train.nugget2d_ae.icae=false", "train.re.poolings=[mean]"]) == {
        reading, steps, "train.re (grid)", *table1}
    assert found(["train.nugget2d_ae.icae=false", "train.re.beyond_one_sentence=table3"]) == {
        reading, steps, "train.re (grid)", *table1}
    assert found(["model.lm.chat_name_or_path=''", "train.nugget2d_ae.icae=false"]) == {
        reading, "model.lm.chat_name_or_path", steps, *table1}
    # each of the paper's Nugget2D compressor settings, undone, is named
    assert found(["train.nugget2d.extra_ratios=[]", "train.nugget2d.ar_scorer=compressor",
                  "nugget2d.scorer_window=null", "eval.lm.baseline_adapter=none",
                  "model.lm.chat_name_or_path=''", "train.nugget2d_ae.icae=false"]) == {
        "eval.lm.baseline_adapter", "Nugget2D 5x in QA (Nugget2D §6.2)", "model.lm.chat_name_or_path",
        "train.nugget2d.ar_scorer (the AR model's scorer)", "nugget2d.scorer_window (AR mode)", steps, TABLE1_BUDGETS}
    assert found(["data.mt.dev_split=''", "data.mt.dev_fraction=0.01"]) == {
        reading, icae, "data.mt.dev_split", steps, *table1}
    # table 1 evaluated at the trained window only: no row reads a model trained at another omega_r
    assert TABLE1_BUDGETS not in found(["eval.lm.contexts=[{total_states: 128, compressed_tokens: 640, "
                                        "context_tokens: 64}]"])
    # Nugget app. B.2: each token reads as many preceding tokens as possible (stride 1); a larger stride is named
    assert "eval.nugget_lm.stride" in found(["eval.nugget_lm.stride=64"])
    # an autoencoding compressor is its own AR scorer source
    assert "train.nugget2d.ar_scorer (the AR model's scorer)" not in found(
        ["train.nugget2d.objective=autoencoding", "train.nugget2d.ar_scorer=compressor",
         "model.lm.chat_name_or_path=''"])


def test_report_reads_nugget2d_metrics(tmp_path):
    from stages.evaluate.eval_qa import paper_row
    from stages.report.tables import eval_table

    # eval_qa names the table-3 row each of its systems reproduces
    assert [paper_row("full"), paper_row("nodoc"), paper_row("lmsumm", 0.1), paper_row("nugget2d", 0.2),
            paper_row("nugget2d", 0.1)] == ["full", "nodoc", "lmsumm_10x", "nugget2d_5x", "nugget2d_10x"]
    assert all(r in PUBLISHED["nugget2d_table3"] for r in ("full", "nodoc", "lmsumm_10x", "nugget2d_5x", "nugget2d_10x"))
    columns = [Column("wiki_subword_ppl", "wiki subword ppl"), Column("wiki_word_ppl", "wiki word ppl"),
               Column("pile_subword_ppl", "pile subword ppl")]
    EvalTable("T1", columns, [
        TableRow("Nugget2D 64/320/32", {"wiki_subword_ppl": 12.5, "wiki_word_ppl": 30.0, "pile_subword_ppl": 9.0},
                 n=4, stderr={"wiki_word_ppl": 0.5}, paper_row="nugget2d_64"),
        TableRow("Compressive 64/320/32", {}, note="no checkpoint", paper_row="compressive_64"),
    ], stand_in="wiki: offline Wikipedia articles (stand-in for WikiText-103)").write(tmp_path)
    t = eval_table("nugget2d_table1", "T1", artifact("eval_lm", tmp_path),
                       {"wikitext_subword": "wiki_subword_ppl", "wikitext_word": "wiki_word_ppl",
                        "pile_subword": "pile_subword_ppl"}, "ctx")
    rows = {label: (m, p) for label, m, p in t.rows}
    # each measured number with its n, and a standard error as the 95% interval
    assert rows["Nugget2D 64/320/32"] == ({"wikitext_subword": "12.50 (n=4)", "wikitext_word": "30.00 ± 0.98 (n=4)",
                                          "pile_subword": "9.00 (n=4)"},
                                         {"wikitext_subword": 6.91, "wikitext_word": 11.78, "pile_subword": 5.01})
    assert rows["Compressive 64/320/32"][0]["pile_subword"] == "not run: no checkpoint"
    assert rows["full_128"][0] == dict.fromkeys(t.columns, NOT_RUN)  # published row nobody measured
    assert "nugget2d_64" not in rows and "key key-eval_lm" in t.context
    assert t.heading == "T1 [stand-in data: wiki: offline Wikipedia articles (stand-in for WikiText-103)]"

    # one stage, two report tables: each keeps the rows that measure its columns
    (tmp_path / "ae").mkdir()
    EvalTable("AE", [Column("bleu", "BLEU"), Column("share_nuggets", "%")], [
        TableRow("nugget2d r=0.05", {"bleu": 90.0, "bleu_L16": 80.0, "n_bleu_L16": 3}, n=8, paper_row="nugget2d_0.05"),
        TableRow("tokens: punctuation", {"share_nuggets": 40.0}, n=500, paper_row="punctuation"),
    ]).write(tmp_path / "ae")
    bleu = eval_table("nugget2d_autoencoding", "AE", artifact("eval_nugget2d_ae", tmp_path / "ae"),
                          {"bleu": "bleu", "L=16": "bleu_L16"}, "ctx")
    tokens = eval_table("nugget2d_tokens", "tokens", artifact("eval_nugget2d_ae", tmp_path / "ae"),
                            {"share_nuggets": "share_nuggets"}, "ctx")
    assert [r[0] for r in bleu.rows] == ["nugget2d r=0.05", "nugget2d_0.1", "icae_0.05", "icae_0.1"]
    assert bleu.rows[0][1:] == ({"bleu": "90.00 (n=8)", "L=16": "80.00 (n=3)"},  # a column's own n
                                {"bleu": "98 (abstract: 20x; lengths not stated)", "L=16": NOT_IN_PAPER})
    assert [r[0] for r in tokens.rows] == ["tokens: punctuation", "line_break"]


STAND_IN = "offline stand-in data (fixture)"


def _eval_tables(root):
    """One fixture EvalTable per Nugget2D / Nugget-LM evaluation stage, each on stand-in data."""
    specs = {
        "eval_lm": [TableRow("Nugget2D 64", {"wiki_subword_ppl": 12.0, "wiki_word_ppl": 30.0, "pile_subword_ppl": 9.0},
                             n=5, stderr={"wiki_word_ppl": 0.5}, paper_row="nugget2d_64"),
                    TableRow("Compressive 64", {"wiki_subword_ppl": 13.0, "wiki_word_ppl": 31.0, "pile_subword_ppl": 9.5},
                             n=5, paper_row="compressive_64")],
        "eval_qa": [TableRow("nugget2d r=0.1", {"accuracy": 50.0}, n=4, stderr={"accuracy": 30.0}, paper_row="nugget2d_10x"),
                    TableRow("nodoc", {"accuracy": 0.0}, n=4, stderr={"accuracy": 0.0}, paper_row="nodoc")],
        "eval_summarization": [TableRow("nugget2d r=0.1", {"rouge1": 20.0, "rouge2": 5.0, "rougeL": 15.0}, n=8,
                                        paper_row="nugget2d_10x")],
        "eval_nugget2d_ae": [TableRow("nugget2d r=0.1", {"bleu": 40.0}, n=8, stderr={"bleu": 2.0},
                                      paper_row="nugget2d_0.1"),
                             TableRow("icae r=0.1", {"bleu": 20.0}, n=8, stderr={"bleu": 2.0}, paper_row="icae_0.1"),
                             TableRow("tokens: punctuation", {"share_nuggets": 30.0, "share_text": 10.0}, n=100,
                                      paper_row="punctuation")],
        "eval_nugget_lm": [TableRow("nugget_r0.1", {"ppl_h1": 40.0, "ppl_h8": 35.0}, n=1042, paper_row="nugget_0.1"),
                           TableRow("transformer", {"ppl_h0": 41.0}, n=1042, paper_row="transformer")],
    }
    inputs = {}
    for stage, rows in specs.items():
        (root / stage).mkdir()
        keys = sorted({k for r in rows for k in r.metrics})
        EvalTable(stage, [Column(k, k) for k in keys], rows, stand_in=STAND_IN).write(root / stage)
        (root / stage / EvalTable.EXAMPLES).write_text('{"system": "x"}\n')
        inputs[stage] = artifact(stage, root / stage)
    return inputs


def test_every_stand_in_cell_carries_its_label_and_n(evaluated, tmp_path):
    """Every measured number of the report says how many examples it stands on, and every
    table measured on stand-in data names it in its title (the fixture's data all are)."""
    _, _, sim_ctx, rec_ctx = evaluated
    (tmp_path / "cs").mkdir()
    CorpusStatistics({"source": "gensim_lee", "documents": 3}).write(tmp_path / "cs")
    inputs = {"eval_similarity": Artifact("eval_similarity", "ks", "", sim_ctx.output_dir, {}),
              "eval_reconstruction": Artifact("eval_reconstruction", "kr", "", rec_ctx.output_dir, {}),
              "corpus_stats": artifact("corpus_stats", tmp_path / "cs"), **_eval_tables(tmp_path)}
    ctx = context(Report, inputs, tmp_path / "report", [])
    Report().run(ctx)
    md = (ctx.output_dir / "report.md").read_text()
    sections = [s for s in md.split("\n## ")[1:] if s.split("\n")[0].split(" [")[0].split(":")[0].startswith("Nugget")]
    measured_tables = 0
    for section in sections:
        heading = section.split("\n")[0]
        cells = [c.strip() for line in section.splitlines() if line.startswith("| ") and "measured" not in line
                 for c in line.strip("|").split("|")[1::2]]
        numbers = [c for c in cells if c[:1].isdigit()]
        if not numbers:
            continue
        measured_tables += 1
        assert "[stand-in data: " in heading, heading
        assert all(re.fullmatch(r"[\d.]+( ± [\d.]+)? \(n=\d+\)", c) for c in numbers), (heading, numbers)
        assert "*Per-example outputs:* [" in section, heading
    assert measured_tables >= 8
    # the fixture's numbers decide the findings they reach
    verdicts = {row[0]: row[2] for row in _cells(md, "Findings at this scale")[1:]}
    assert verdicts["Nugget2D reconstructs better than ICAE at the same ratio (r = 0.1, BLEU)"] == SHOWN
    # perplexities without an interval: the paper's direction, but not claimed
    assert verdicts["a Nugget LM reading 8 segments of history through nuggets has lower perplexity than the "
                    "Transformer LM without history"] == NOT_SHOWN
    # 50 ± 58.8 vs 0 ± 0: the difference is within the intervals
    assert verdicts["Nugget2D (10x) answers more questions than the LM without the document"] == NOT_SHOWN


def test_report_refuses_a_number_without_its_n(evaluated, tmp_path):
    _, _, sim_ctx, rec_ctx = evaluated
    (tmp_path / "cs").mkdir()
    CorpusStatistics({"source": "gensim_lee", "documents": 3}).write(tmp_path / "cs")
    (tmp_path / "eval_qa").mkdir()
    EvalTable("QA", [Column("accuracy", "acc")], [TableRow("nugget2d r=0.1", {"accuracy": 50.0}, n=None,
                                                            paper_row="nugget2d_10x")],
              stand_in=STAND_IN).write(tmp_path / "eval_qa")
    inputs = {"eval_similarity": Artifact("eval_similarity", "ks", "", sim_ctx.output_dir, {}),
              "eval_reconstruction": Artifact("eval_reconstruction", "kr", "", rec_ctx.output_dir, {}),
              "corpus_stats": artifact("corpus_stats", tmp_path / "cs"),
              "eval_qa": artifact("eval_qa", tmp_path / "eval_qa")}
    ctx = context(Report, inputs, tmp_path / "report", [])
    with pytest.raises(ValueError, match="nugget2d_table3: nugget2d r=0.1 / accuracy = 50 has no n"):
        Report().run(ctx)
    assert not (ctx.output_dir / "report.md").exists()


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
