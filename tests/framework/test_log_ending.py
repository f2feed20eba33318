"""What a ``make run`` log shows: it ends with the report's file and the parent run's MLflow
page (`pipelines.cli.print_results`), carries no colour codes off a terminal or under
``NO_COLOR`` (`stages.framework.quiet`), and the Makefile drops ``ray job submit``'s
own chatter. No Ray."""

from __future__ import annotations

import io
import logging
import os
import re
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest

from pipelines.cli import mlflow_run_url, print_results
from stages.framework import quiet
from stages.framework.executor import PipelineResult, StageOutcome

REPO = Path(__file__).resolve().parents[2]


def _result(report: bool) -> PipelineResult:
    outcomes = [StageOutcome("corpus_stats", "k1", "ran", "/r/corpus_stats/k1", 1.0, "c1")]
    if report:
        outcomes.append(StageOutcome("report", "k2", "hit", "/r/report/k2", 0.0, "c2"))
    return PipelineResult("parent123", "sqlite:////r/mlflow.db", "7", outcomes)


def _ending(capsys, report: bool) -> list[str]:
    cfg = SimpleNamespace(run=SimpleNamespace(experiment="nugget-pipeline"))
    print_results(_result(report), cfg, SimpleNamespace(root_uri="/r"))
    return capsys.readouterr().out.rstrip("\n").splitlines()


def test_the_log_ends_with_the_report_file_and_the_parent_runs_page(capsys):
    lines = _ending(capsys, report=True)
    assert lines[-2] == "report     : /r/report/k2/report.html"
    assert lines[-1] == ("MLflow run : http://127.0.0.1:5000/#/experiments/7/runs/parent123"
                         "?workflowType=machine_learning")
    assert any(ln.startswith("done: 1 stage(s) ran, 1 cached") for ln in lines)
    # a local store: how to serve that page, on this run's store
    assert "serve it   : make mlflow-ui NUGGET_ARTIFACT_ROOT=/r" in lines


def test_without_the_report_stage_the_last_line_is_the_runs_page(capsys):
    lines = _ending(capsys, report=False)
    assert lines[-1].startswith("MLflow run : http://127.0.0.1:5000/#/experiments/7/runs/parent123")
    assert not any(ln.startswith("report") for ln in lines)


def test_a_tracking_server_serves_the_runs_page_itself():
    assert mlflow_run_url("http://head:5000/", "3", "abc") == (
        "http://head:5000/#/experiments/3/runs/abc?workflowType=machine_learning")


class _Stream(io.StringIO):
    def __init__(self, tty: bool) -> None:
        super().__init__()
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty


def test_colour_only_on_a_terminal_and_never_under_no_color(monkeypatch):
    monkeypatch.delenv("NO_COLOR", raising=False)
    assert quiet.use_color(_Stream(tty=True)) and not quiet.use_color(_Stream(tty=False))
    monkeypatch.setenv("NO_COLOR", "1")
    assert not quiet.use_color(_Stream(tty=True))


def test_ray_output_is_plain_in_a_log_file(monkeypatch):
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.delenv("RAY_COLOR_PREFIX", raising=False)
    handler = logging.StreamHandler(io.StringIO())
    ray_logger = logging.getLogger("ray")
    ray_logger.addHandler(handler)
    try:
        quiet.plain_ray_output(_Stream(tty=True))  # a terminal: Ray keeps its colours
        assert "RAY_COLOR_PREFIX" not in os.environ and not handler.filters
        quiet.plain_ray_output(_Stream(tty=False))
        assert os.environ["RAY_COLOR_PREFIX"] == "0"  # no colour around "(stage:x pid=N)"
        # Ray's own records (its dashboard link) lose their colour codes
        ray_logger.warning("View the dashboard at %s%s%s %s", "\x1b[1m", "\x1b[32m", "http://127.0.0.1:8265",
                           "\x1b[39m")
        written = handler.stream.getvalue()
        assert "\x1b" not in written and "View the dashboard at http://127.0.0.1:8265" in written
    finally:
        ray_logger.removeHandler(handler)


def test_scheduler_lines_are_debug_unless_verbose(monkeypatch):
    monkeypatch.setenv(quiet.VERBOSE_ENV, "0")
    assert quiet.chatter_level() == logging.DEBUG  # below the driver's INFO: not in the log
    monkeypatch.setenv(quiet.VERBOSE_ENV, "1")
    assert quiet.chatter_level() == logging.INFO


def _makefile_var(name: str) -> str:
    text = (REPO / "Makefile").read_text()
    found = re.search(rf"^{name}\s*:=\s*(.+)$", text, re.M)
    assert found, f"Makefile has no {name}"
    return found.group(1).replace("\\\\", "\\")


@pytest.mark.parametrize(("line", "dropped"), [
    ("2026-11-24 22:33:55,292\tINFO cli.py:333 -- ray job logs raysubmit_x", True),
    ("2026-11-24 22:45:52,575\tSUCC cli.py:67 -- Job 'raysubmit_x' succeeded", True),
    ("2026-11-24 22:45:52,569\tINFO sdk.py:520 -- WebSocket closed for job raysubmit_x with close code 1000", True),
    ("2026-11-24 22:33:54,596\tWARNING working_dir.py:101 -- Directory '.git' is now ignored by default", True),
    ("2026-11-24 22:45:52,575\tERR cli.py:70 -- Job 'raysubmit_x' failed", False),
    ("(raylet) WARNING: 8 PYTHON worker processes have been started on node: 83a7 with address: 127.0.0.1, "
     "which is 4x the maximum expected startup concurrency (2).", True),
    ("(raylet) A worker died or was killed while executing a task", False),
    ("MLflow run : http://127.0.0.1:5000/#/experiments/1/runs/abc", False),
    ("2026-11-24 22:34:03,553 INFO nugget.pipeline: [ 0/33 0s eta ?] tokenizer start", False),
])
def test_make_run_drops_ray_job_submits_chatter_only(line, dropped):
    pattern = _makefile_var("RAY_CLI_CHATTER")
    kept = subprocess.run(["grep", "-vE", pattern], input=line + "\n", capture_output=True, text=True).stdout
    assert (kept == "") == dropped


def test_quiet_drops_ray_datas_note_that_the_bars_are_off(monkeypatch):
    monkeypatch.delenv(quiet.VERBOSE_ENV, raising=False)
    note = logging.LogRecord("ray.data._internal.progress", logging.WARNING, "", 0,
                             "Progress bars disabled. To enable, set `ray.data.DataContext...`", None, None)
    other = logging.LogRecord("ray.data._internal.progress", logging.WARNING, "", 0, "a real problem", None, None)
    progress = logging.getLogger("ray.data._internal.progress")
    quiet.apply(verbose=False)
    try:
        assert not progress.filter(note) and progress.filter(other)
    finally:
        quiet.apply(verbose=True)
    assert progress.filter(note)
