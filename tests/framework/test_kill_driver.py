"""A driver SIGKILLed while a stage runs leaves nothing behind that a rerun does not clean:
no process (the reaper stops its private Ray), no complete-looking output, no RUNNING
run after the rerun, no scratch. The ten-point measurement on a training cut is
benchmarks/kill_anywhere.py; this is one point of it, on the cheapest stage."""

from __future__ import annotations

import importlib.util
import time
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

REPO = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.slow, pytest.mark.ray]


def _harness():
    spec = importlib.util.spec_from_file_location("kill_anywhere", REPO / "benchmarks" / "kill_anywhere.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _wait_for_line(log: Path, text: str, timeout: float) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if log.exists() and text in log.read_text():
            return
        time.sleep(0.2)
    raise TimeoutError(f"{text!r} not in {log} after {timeout} s:\n{log.read_text() if log.exists() else ''}")


def test_sigkill_mid_stage_then_rerun(tmp_path, sources, monkeypatch):
    ka = _harness()
    monkeypatch.setenv("NUGGET_SOURCES_DIR", str(sources))
    root, log = tmp_path / "root", tmp_path / "driver.log"
    overrides = [f"run.sources_dir={sources}", "run.num_cpus=2"]
    driver = ka.start_driver(root, "corpus_stats", overrides, log)
    known: dict[int, float] = {}
    deadline = time.time() + 120
    while "corpus_stats" not in (log.read_text() if log.exists() else "") or " start " not in log.read_text():
        assert driver.poll() is None and time.time() < deadline, log.read_text()
        known.update(ka.descendants(driver.pid))
        time.sleep(0.2)
    known.update(ka.descendants(driver.pid))
    assert any("raylet" in name for name in ka.alive(known))  # the driver's private Ray runs
    driver.kill()
    driver.wait()
    deadline = time.time() + 30
    while ka.alive(known) and time.time() < deadline:
        time.sleep(0.5)
    assert ka.alive(known) == []  # the reaper stopped the agents Ray leaves behind
    assert "corpus_stats" not in ka.outputs(root)  # killed mid-stage: nothing looks complete
    assert ka.running_runs(root) >= 1  # the killed driver could not end its runs

    rc, _ = ka.run_to_end(root, "corpus_stats", overrides, log)
    assert rc == 0, log.read_text()
    _wait_for_line(log, "marked", 1)  # the rerun said it ended the dead driver's runs
    assert ka.running_runs(root) == 0
    client = MlflowClient(f"sqlite:///{root}/mlflow.db")
    exp = client.get_experiment_by_name("nugget-pipeline")
    failed = client.search_runs([exp.experiment_id], filter_string="attributes.status = 'FAILED'")
    assert failed and all("is gone" in r.data.tags["nugget.orphaned"] for r in failed)
    final = ka.outputs(root)
    assert final["corpus_stats"]["intact"]
    assert ka.leftovers(root, final) == []


def test_sigterm_ends_the_runs_killed(tmp_path, sources, monkeypatch):
    """SIGTERM (``ray job stop``, a preemption): the driver cancels its stage and ends its
    runs KILLED itself; nothing is left for the next driver to repair. It used to exit 1
    without a word (Ray turned the SystemExit into ``SystemExit(1)``)."""
    ka = _harness()
    monkeypatch.setenv("NUGGET_SOURCES_DIR", str(sources))
    root, log = tmp_path / "root", tmp_path / "driver.log"
    driver = ka.start_driver(root, "corpus_stats", [f"run.sources_dir={sources}", "run.num_cpus=2"], log)
    known: dict[int, float] = {}
    deadline = time.time() + 120
    while " start " not in (log.read_text() if log.exists() else ""):
        assert driver.poll() is None and time.time() < deadline, log.read_text()
        known.update(ka.descendants(driver.pid))
        time.sleep(0.2)
    driver.terminate()
    # a code of its own (128 + SIGTERM), not 1, which means a stage failed; and a line saying so
    assert driver.wait(timeout=60) == 143, log.read_text()[-3000:]
    assert "error: stopped by SIGTERM: the running stages were cancelled" in log.read_text()
    assert ka.running_runs(root) == 0
    client = MlflowClient(f"sqlite:///{root}/mlflow.db")
    exp = client.get_experiment_by_name("nugget-pipeline")
    runs = client.search_runs([exp.experiment_id])
    assert {r.info.status for r in runs} == {"KILLED"}
    assert all("SystemExit" in r.data.tags["error"] for r in runs)
    deadline = time.time() + 30
    while ka.alive(known) and time.time() < deadline:
        time.sleep(0.5)
    assert ka.alive(known) == []
    assert "corpus_stats" not in ka.outputs(root)
