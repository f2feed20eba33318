"""The report folder travels whole and reads on its own: every link resolves in a copy, the
run header names the producing run, unrun rows collapse, results.json holds every cell,
and the Nugget2D figures are drawn from their tables."""

from __future__ import annotations

import json
import re
import shutil
from html.parser import HTMLParser
from pathlib import Path

from stages.artifacts.evaluate import Column, EvalTable, TableRow
from stages.nugget.artifacts.results import ReconstructionResults
from stages.nugget2d.artifacts import CalibratedThreshold
from stages.report.report import Report
from tests.evaluation.fixtures import artifact, context, report_required


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.targets: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.targets += [v for k, v in attrs if k in ("href", "src") and v]


def _tiny_report(tmp_path: Path) -> Path:
    """A report rendered from tiny inputs with a figure, per-example files and Nugget2D tables."""
    inputs = report_required(tmp_path / "evaluated")
    rec = tmp_path / "evaluated" / "eval_reconstruction"
    (rec / "bleu_vs_ratio.png").write_bytes(b"\x89PNG fixture")
    (rec / ReconstructionResults.EXAMPLES).write_text('{"system": "a"}\n')
    qa = tmp_path / "eval_qa"
    qa.mkdir()
    EvalTable("QA", [Column("accuracy", "accuracy"), Column("context_ratio", "ratio")],
              [TableRow("nugget2d 10x", {"accuracy": 25.0, "context_ratio": 0.1}, n=4, paper_row="nugget2d_10x"),
               TableRow("full", {"accuracy": 50.0, "context_ratio": 1.0}, n=4, paper_row="full")]).write(qa)
    (qa / EvalTable.EXAMPLES).write_text('{"system": "full"}\n')
    ae = tmp_path / "eval_nugget2d_ae"
    ae.mkdir()
    EvalTable("AE", [Column("bleu", "BLEU"), Column("bleu_L16", "L16"), Column("bleu_L48", "L48")],
              [TableRow("nugget2d r0.1", {"bleu": 9.0, "bleu_L16": 10.0, "bleu_L48": 8.0}, n=8,
                        paper_row="nugget2d_0.1")]).write(ae)
    cal = tmp_path / "calibrate_threshold"
    cal.mkdir()
    CalibratedThreshold(4.25, 0.1, "train_nugget2d", "f", 64, {"heldout_ratio_mean": 0.1}).write(cal)
    (cal / CalibratedThreshold.HISTOGRAM).write_bytes(b"\x89PNG histogram")
    ctx = context(Report, {**inputs, "eval_qa": artifact("eval_qa", qa), "eval_nugget2d_ae": artifact("eval_nugget2d_ae", ae),
                           "calibrate_threshold": artifact("calibrate_threshold", cal)},
                  tmp_path / "root" / "report" / "key", [])
    Report().run(ctx)
    return ctx.output_dir


def _dangling(folder: Path) -> list[str]:
    """Every href / src of report.html and link / image of report.md that does not resolve in ``folder``."""
    parser = _Links()
    parser.feed((folder / "report.html").read_text())
    md = (folder / "report.md").read_text()
    targets = parser.targets + re.findall(r"\]\(([^)\s]+)\)", md)
    assert targets
    bad = []
    for t in targets:
        if t.startswith(("data:", "http://", "https://", "#")):
            continue
        if ".." in Path(t).parts or Path(t).is_absolute() or not (folder / t).is_file():
            bad.append(t)
    return bad


def test_a_copied_report_folder_has_no_dangling_reference(tmp_path):
    out = _tiny_report(tmp_path)
    copy = tmp_path / "mailed" / "report"
    shutil.copytree(out, copy)
    shutil.rmtree(tmp_path / "evaluated")  # the upstream artifacts are not where the copy goes
    assert _dangling(copy) == []
    page = (copy / "report.html").read_text()
    assert "src='data:image/png;base64," in page and "../" not in page and "border=" not in page
    assert (copy / "samples" / "eval_qa" / EvalTable.EXAMPLES).read_text() == '{"system": "full"}\n'


def test_the_header_names_the_producing_run_and_its_mlflow_page(tmp_path):
    out = _tiny_report(tmp_path)
    page, md = (out / "report.html").read_text(), (out / "report.md").read_text()
    # the fixture's logger: experiment 7, parent run "parent-run" of a local store (make mlflow-ui's port)
    url = "http://127.0.0.1:5000/#/experiments/7/runs/parent-run"
    assert f"href='{url}'" in page and f"[{url}]({url})" in md
    for fact in ("**profile:** tiny", "abc123", "cafe", "produced", "by MLflow run parent-run", "wall time"):
        assert fact in md, fact
    assert "<nav class='toc'>" in page and "href='#findings-at-this-scale'" in page and "<style>" in page


def test_unrun_rows_collapse_to_one_line_and_verdicts_are_coloured(tmp_path):
    page = (_tiny_report(tmp_path) / "report.html").read_text()
    section = page.split(">Nugget2D table 1: LM perplexity</h2>")[1].split("<h2")[0]
    assert "<table>" not in section  # nothing measured: no row is listed
    assert re.search(r"(\d+) of \1 rows not run in this profile \(no stage of this run measured them\): ", section)
    assert "class='verdict v-not-measurable'" in page


def test_results_json_holds_every_measured_cell(tmp_path):
    out = _tiny_report(tmp_path)
    records = json.loads((out / "results.json").read_text())
    qa = [r for r in records if r["table"] == "nugget2d_table3"]
    assert {r["row_id"]: (r["value"], r["n"]) for r in qa} == {"nugget2d_10x": (25.0, 4), "full": (50.0, 4)}
    assert all(set(r) == {"table", "row", "row_id", "column", "value", "n", "low", "high", "flags", "published",
                          "verdict"} for r in records)
    full = next(r for r in qa if r["row_id"] == "full")
    assert full["published"] is not None and full["verdict"] is None
    assert next(r for r in qa if r["row_id"] == "nugget2d_10x")["verdict"].startswith("nugget2d_qa_beats_lmsumm: ")
    assert Report.parent_tables == ("results.json",)


def test_nugget2d_figures_are_drawn_and_the_threshold_captioned(tmp_path):
    out = _tiny_report(tmp_path)
    md = (out / "report.md").read_text()
    for name in ("nugget2d_bleu_by_length.png", "nugget2d_qa_by_compression.png"):
        assert (out / "figures" / name).stat().st_size > 1000 and f"(figures/{name})" in md
    assert "(figures/calibrate_threshold-scores_hist.png)" in md and "Lambda = 4.25 for ratio r = 0.1" in md


def test_a_large_per_example_file_travels_gzipped(tmp_path, monkeypatch):
    """Above GZIP_ABOVE bytes a per-example file is copied as <name>.gz, linked as such, and
    decompresses to the original; a small one is copied as it is."""
    import gzip

    from stages.report import bundle as bundle_module

    monkeypatch.setattr(bundle_module, "GZIP_ABOVE", 100)
    stage = tmp_path / "eval_x" / "key"
    stage.mkdir(parents=True)
    big, small = stage / "examples.jsonl", stage / "ranks.jsonl"
    big.write_text(json.dumps({"output": "x" * 500}) + "\n")
    small.write_text("{}\n")
    report = tmp_path / "report"
    bundle = bundle_module.Bundle(report, {stage: "eval_x"})
    assert bundle.sample(big) == "samples/eval_x/examples.jsonl.gz"
    assert gzip.decompress((report / "samples/eval_x/examples.jsonl.gz").read_bytes()) == big.read_bytes()
    assert bundle.sample(small) == "samples/eval_x/ranks.jsonl" and (report / bundle.sample(small)).read_text() == "{}\n"
