"""The stage table and DAG diagram of docs/architecture.md are what
``nugget list --markdown`` prints from the registry now (`pipelines.stage_docs`)."""

from __future__ import annotations

import shutil

import pytest

from pipelines import stage_docs
from pipelines.nugget import main
from stages.framework import stage_table
from stages.registry import DAG
from tests.framework.fake_stages import Source


def test_the_docs_hold_the_generated_blocks():
    problems = stage_docs.stale(DAG)
    assert not problems, "\n".join(problems) + f"\nrun: {stage_docs.FIX_COMMAND} (or make docs)"


def test_a_reworded_description_makes_the_docs_stale(monkeypatch):
    table = stage_table.read()
    table["build_rr"]["description"] = "Reworded in the stage table only."
    monkeypatch.setattr(stage_table, "_load", lambda path: table)
    problems = stage_docs.stale(DAG)
    assert len(problems) == 1 and "docs/architecture.md: block 'stages'" in problems[0], problems
    assert "Reworded in the stage table only." in problems[0]


def test_write_rewrites_only_the_blocks(tmp_path):
    for page in stage_docs.PAGES:
        (tmp_path / page).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(stage_docs.ROOT / page, tmp_path / page)
    page = tmp_path / "docs/architecture.md"
    text = page.read_text(encoding="utf-8")
    broken = text.replace("| `build_rr` |", "| `build_rx` |").replace("\n## Caching", "\n## Caching (kept)")
    page.write_text(broken, encoding="utf-8")
    assert stage_docs.stale(DAG, tmp_path)
    assert stage_docs.write_pages(DAG, tmp_path) == ["docs/architecture.md"]
    assert stage_docs.stale(DAG, tmp_path) == []
    assert page.read_text(encoding="utf-8") == text.replace("\n## Caching", "\n## Caching (kept)")


def test_a_page_without_its_block_is_an_error():
    with pytest.raises(stage_docs.DocsError, match="no generated block"):
        stage_docs.rewrite("# Architecture\n", "docs/architecture.md", stage_docs.blocks(DAG))
    unterminated = stage_docs.start_marker("dag") + "\nold\n"
    with pytest.raises(stage_docs.DocsError, match="1 start markers but 0 blocks"):
        stage_docs.found_blocks(unterminated, "docs/architecture.md")


def test_group_is_the_stage_study_package():
    assert [stage_docs.group_of(DAG.stages[n]) for n in ("corpus_stats", "build_rr", "train_re", "calibrate_threshold",
                                                          "eval_qa", "report")] == \
        ["corpora", "Nugget", "restorable embeddings", "Nugget2D", "Nugget2D", "report"]
    with pytest.raises(stage_docs.DocsError, match="outside the study packages"):
        stage_docs.group_of(Source)


def test_the_diagram_draws_required_reads_only():
    diagram = stage_docs.dag_diagram(DAG)
    assert "  train_nugget2d --> calibrate_threshold" in diagram
    assert "sweep_nugget --> eval_reconstruction" not in diagram  # an optional read: in the table
    assert "eval_qa --> report" not in diagram
    assert f"{len(DAG.order)} stages." in diagram
    boxes = [line.split()[1] for line in diagram.splitlines() if line.lstrip().startswith("subgraph ")]
    assert "group_restorable_embeddings" in boxes and all(b.isidentifier() for b in boxes)  # mermaid ids: one word


def test_nugget_list_markdown_prints_every_block(capsys):
    assert main(["list", "--markdown"]) == 0
    assert capsys.readouterr().out == stage_docs.markdown(DAG) + "\n"
