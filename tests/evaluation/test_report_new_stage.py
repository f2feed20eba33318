"""A new evaluation stage reaches the report without an edit to the report: one module with a
typed header writing an `EvalTable`, plus one registry line. The report collects its table
(`stages.framework.contract.collected`), and with the real registry collects no stage it
already shows in a paper table."""

from __future__ import annotations

import importlib
import json
import sys
import textwrap
from pathlib import Path

import pytest

from stages.artifacts.evaluate import Column, EvalTable, TableRow
from stages.framework.dag import Dag
from stages.framework.optional import collected_upstream, resolve_optional_upstream
from stages.framework.store import ArtifactStore
from stages.report.report import Report
from tests.evaluation.fixtures import artifact, context, report_required

# the researcher's new stage: a module of its own in a new study's package
NEW_STAGE = '''
from __future__ import annotations

from dataclasses import dataclass

from stages.artifacts.evaluate import Column, EvalTable, TableRow
from stages.corpora.artifacts import CorpusStatistics
from stages.framework.contract import section
from stages.framework.stage import Stage, StageContext


@dataclass(frozen=True)
class DocumentCountConfig:
    profile: str = section("profile")


@dataclass(frozen=True)
class DocumentCountInputs:
    stats: CorpusStatistics


class EvalDocumentCount(Stage[DocumentCountConfig, DocumentCountInputs, EvalTable]):
    name = "eval_document_count"
    description = "documents per corpus (a study outside the papers)"

    def compute(self, ctx: StageContext, cfg: DocumentCountConfig, inputs: DocumentCountInputs) -> None:
        documents = int(inputs.stats.stats["documents"])
        table = EvalTable(f"Document count study ({cfg.profile})", [Column("documents", "documents", "{:.0f}")],
                          [TableRow(inputs.stats.stats["source"], {"documents": float(documents)}, n=documents)])
        table.write(ctx.output_dir)
        ctx.log_metrics(table.flat_metrics())
'''


@pytest.fixture
def new_stage(tmp_path, monkeypatch):
    """The new stage's class, imported from its module in a fresh package under ``tmp_path``;
    every registered stage's ``upstream`` is restored afterwards (the test re-resolves them)."""
    from stages.registry import ALL_STAGES

    package = tmp_path / "pkg" / "document_study"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "eval_document_count.py").write_text(textwrap.dedent(NEW_STAGE))
    monkeypatch.syspath_prepend(str(tmp_path / "pkg"))
    for stage in ALL_STAGES:
        monkeypatch.setattr(stage, "upstream", stage.upstream)
    module = importlib.import_module("document_study.eval_document_count")
    yield module.EvalDocumentCount
    for name in ("document_study.eval_document_count", "document_study"):
        sys.modules.pop(name, None)


def test_a_registered_evaluation_stage_shows_in_the_report(new_stage, tmp_path):
    from stages.config import load_config
    from stages.registry import ALL_STAGES

    registered = (*ALL_STAGES, new_stage)  # the one registry line
    resolve_optional_upstream(registered)
    assert collected_upstream(Report, registered) == ("eval_harness", "eval_document_count")  # registry order
    assert Report.upstream[-1] == "eval_document_count" and "eval_qa" in Report.upstream  # named, not collected
    dag = Dag(registered)
    assert dag.closure(["report"]).index("eval_document_count") < dag.closure(["report"]).index("report")
    planned = {p.name: p for p in dag.plan(load_config([]), ArtifactStore(str(tmp_path / "store")), ["report"])}
    assert planned["report"].upstream_keys["eval_document_count"] == planned["eval_document_count"].key

    # the new stage on fixture outputs, then the report reading its table
    inputs = report_required(tmp_path / "evaluated")
    ctx = context(new_stage, {"corpus_stats": inputs["corpus_stats"]}, tmp_path / "eval_document_count", [])
    new_stage().run(ctx)
    new_stage.check_output(ctx)
    report = context(Report, {**inputs, "eval_document_count": artifact("eval_document_count", ctx.output_dir)},
                     tmp_path / "report", [])
    Report().run(report)
    md = (report.output_dir / "report.md").read_text()
    section = md.split("\n## Document count study (tiny)\n")[1].split("\n## ")[0]
    assert "*Measured:* profile tiny; measured by stage eval_document_count (key key-eval_document_count)." in section
    assert "| fixture | 1 | 1 |" in section  # system, n, documents
    assert md.index("## Document count study") > md.index("## RE table 9")  # after the papers' tables
    page = (report.output_dir / "report.html").read_text()
    assert ">Document count study (tiny)</h2>" in page
    assert "<td>fixture</td><td class='num'>1</td><td class='num'>1</td>" in page
    assert (report.output_dir / "tables" / "eval_document_count.csv").read_text().startswith("system,paper_row,n")
    results = json.loads((report.output_dir / "results.json").read_text())
    cell = [r for r in results if r["table"] == "eval_document_count" and r["column"] == "documents"]
    assert [(c["row"], c["value"], c["n"]) for c in cell] == [("fixture", 1, 1)]
    assert not any(k.startswith("eval_document_count") for k in report.logger.metrics)  # its own run has them


def test_a_collected_number_without_its_n_is_refused(tmp_path):
    inputs = report_required(tmp_path / "evaluated")
    (tmp_path / "eval_new").mkdir()
    EvalTable("New", [Column("acc", "accuracy")], [TableRow("sys", {"acc": 0.5})]).write(tmp_path / "eval_new")
    ctx = context(Report, {**inputs, "eval_new": artifact("eval_new", tmp_path / "eval_new")}, tmp_path / "report", [])
    with pytest.raises(ValueError, match="eval_new: sys / acc = 0.5 has no n"):
        Report().run(ctx)


def test_the_report_collects_no_stage_it_names():
    from stages.registry import ALL_STAGES

    writers = [s.name for s in ALL_STAGES if s.output is EvalTable]
    assert writers and set(writers) <= set(Report.upstream)  # every evaluation table reaches the report
    # ... once: each through its paper table's field, or collected (eval_harness: no paper table)
    assert collected_upstream(Report, ALL_STAGES) == ("eval_harness",)
    assert len(Report.upstream) == len(set(Report.upstream))


def test_a_named_evaluation_is_not_shown_twice(tmp_path):
    inputs = report_required(tmp_path / "evaluated")
    folder: Path = tmp_path / "eval_qa"
    folder.mkdir()
    EvalTable("QA as eval_qa writes it", [Column("accuracy", "accuracy")],
              [TableRow("full", {"accuracy": 0.5}, n=4, paper_row="full")]).write(folder)
    ctx = context(Report, {**inputs, "eval_qa": artifact("eval_qa", folder)}, tmp_path / "report", [])
    Report().run(ctx)
    md = (ctx.output_dir / "report.md").read_text()
    assert md.count("## Nugget2D table 3: QA accuracy") == 1 and "QA as eval_qa writes it" not in md
