"""Two invocations computing the same stage at once: one computes, the other waits for the
key's lock and reuses the winner's output (`worker.run_one`, called without Ray)."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from mlflow.tracking import MlflowClient

from stages.config import load_config
from stages.framework.stage import Stage, StageContext
from stages.framework.store import ArtifactStore
from stages.framework.tracking import Tracker
from stages.framework.worker import run_one


class Slow(Stage):
    """Counts its executions in sources_dir, then takes a second to finish."""

    name = "slow"
    config_keys = ("report.title",)

    def run(self, ctx: StageContext) -> None:
        with (Path(ctx.sources_dir) / "executions").open("a") as fh:
            fh.write("x")
        time.sleep(1.0)
        ctx.write_json("out.json", {"title": ctx.cfg("report.title")})
        ctx.log_metrics({"value": 1})


def test_one_computes_the_other_reuses(tmp_path, monkeypatch):
    from stages.framework import worker

    # run_one quiets the libraries of the process it runs in: here that is pytest itself
    monkeypatch.setattr(worker.quiet, "apply", lambda verbose=None: None)
    root, sources = tmp_path / "root", tmp_path / "sources"
    root.mkdir()
    sources.mkdir()
    cfg = load_config([f"run.artifact_root={root}", f"run.sources_dir={sources}"])
    tracker = Tracker(f"sqlite:///{root}/mlflow.db", "exp", f"{root}/mlflow-artifacts")
    loggers = [tracker.start_run(f"invocation {i}", {}) for i in range(2)]
    results: list[dict] = [{}, {}]

    def invoke(i: int) -> None:
        results[i] = run_one(Slow, cfg, "k", {}, loggers[i], forced=False)

    threads = [threading.Thread(target=invoke, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
        time.sleep(0.2)
    for t in threads:
        t.join(timeout=60)
    assert (sources / "executions").read_text() == "x"  # computed once
    assert sorted(r["reused"] for r in results) == [False, True]
    assert results[0]["uri"] == results[1]["uri"]
    assert ArtifactStore(str(root)).artifact("slow", "k").file("out.json").exists()
    client = MlflowClient(tracker.tracking_uri)
    runs = [client.get_run(lg.run_id) for lg in loggers]
    assert [r.info.status for r in runs] == ["FINISHED", "FINISHED"]  # ended by run_one itself
    reused = next(r for r, res in zip(runs, results, strict=True) if res["reused"])
    assert reused.data.tags["reused_concurrent_output"] == "true"
    assert reused.data.metrics["value"] == 1.0
    assert sorted(p.name for p in (root / "slow").iterdir()) == ["k"]  # no scratch left
