"""Concurrent invocations on one artifact root and one sqlite store, measured.

    python benchmarks/concurrent_runs.py --tries 3 --invocations 2 --out benchmarks/results/concurrent_runs.json

Per try, on a fresh root: start ``--invocations`` drivers of the same cut at the same
moment (each with its own private Ray), wait for all, then check that every driver exited
0, every stage was computed by exactly one of them (the others waited for the key's lock
and reused it: MLflow runs tagged ``reused_concurrent_output``, or planned it as a hit),
every output is intact, the sqlite store passes ``PRAGMA integrity_check``, no run is
left RUNNING and no scratch is left. One more try (``--force-try``) reruns a stage with
``--force`` while a second invocation reads it, and checks the reader's output is built
from a complete input and the replaced output is intact.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from kill_anywhere import REPO, leftovers, outputs, running_runs, start_driver  # noqa: E402

DEFAULT_TARGETS = "corpus_stats,build_rr"


def computed_per_stage(root: Path) -> dict[str, int]:
    """Per stage: how many invocations computed it (child runs that ran it, not reused)."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient(f"sqlite:///{root}/mlflow.db")
    exp = client.get_experiment_by_name("nugget-pipeline")
    runs = client.search_runs([exp.experiment_id], filter_string="tags.stage != ''", max_results=5000)
    counts: dict[str, int] = {}
    for run in runs:
        tags = run.data.tags
        computed = tags.get("cache_hit") == "false" and tags.get("reused_concurrent_output") != "true"
        counts[tags["stage"]] = counts.get(tags["stage"], 0) + int(computed and run.info.status == "FINISHED")
    return counts


def integrity(root: Path) -> str:
    with sqlite3.connect(root / "mlflow.db") as conn:
        return conn.execute("PRAGMA integrity_check").fetchone()[0]


def one_try(index: int, work: Path, invocations: int, targets: str, overrides: list[str]) -> dict[str, Any]:
    root = work / f"try{index}"
    start = time.time()
    drivers = [start_driver(root, targets, overrides, work / f"try{index}-{i}.log") for i in range(invocations)]
    codes = [d.wait() for d in drivers]
    final = outputs(root)
    computed = computed_per_stage(root)
    row = {
        "try": index, "seconds": round(time.time() - start, 1), "exit_codes": codes,
        "computed_per_stage": computed, "intact": sorted(s for s, o in final.items() if o["intact"]),
        "sqlite_integrity": integrity(root), "runs_running": running_runs(root),
        "scratch_left": leftovers(root, final),
    }
    row["clean"] = (all(c == 0 for c in codes) and all(n == 1 for n in computed.values())
                    and len(row["intact"]) == len(final) and row["sqlite_integrity"] == "ok"
                    and not row["runs_running"] and not row["scratch_left"])
    return row


def force_try(work: Path, overrides: list[str]) -> dict[str, Any]:
    """``tokenizer --force`` while ``build_rr`` (which reads the tokenizer) runs."""
    root = work / "force"
    log = work / "force-setup.log"
    assert start_driver(root, "build_rr", overrides, log).wait() == 0
    subprocess.run(["rm", "-rf", *map(str, root.glob("build_rr/*"))], check=True)  # build_rr must run again
    reader = start_driver(root, "build_rr", overrides, work / "force-reader.log")
    deadline = time.time() + 600
    while "build_rr" not in _text(work / "force-reader.log") or " start " not in _text(work / "force-reader.log"):
        if time.time() > deadline or reader.poll() is not None:
            break
        time.sleep(0.2)
    env_cmd = [sys.executable, "-m", "pipelines.stage", "tokenizer", "--force", f"run.artifact_root={root}", *overrides]
    writer = subprocess.run(env_cmd, cwd=REPO, capture_output=True, text=True)
    reader_rc = reader.wait()
    final = outputs(root)
    return {"reader_exit": reader_rc, "forced_exit": writer.returncode,
            "intact": sorted(s for s, o in final.items() if o["intact"]), "runs_running": running_runs(root),
            "scratch_left": leftovers(root, final), "sqlite_integrity": integrity(root),
            "clean": reader_rc == 0 and writer.returncode == 0 and len(final) == 2
            and all(o["intact"] for o in final.values()) and not running_runs(root)}


def _text(path: Path) -> str:
    return path.read_text() if path.exists() else ""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tries", type=int, default=3)
    parser.add_argument("--invocations", type=int, default=2)
    parser.add_argument("--targets", default=DEFAULT_TARGETS)
    parser.add_argument("--no-force-try", action="store_true")
    parser.add_argument("--work", type=Path, default=None)
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results" / "concurrent_runs.json")
    parser.add_argument("overrides", nargs="*", default=["run.num_cpus=2"])
    args = parser.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="concurrent-runs-"))
    work.mkdir(parents=True, exist_ok=True)
    rows = []
    for i in range(args.tries):
        rows.append(one_try(i, work, args.invocations, args.targets, args.overrides))
        print(json.dumps(rows[-1]), flush=True)
    forced = None if args.no_force_try else force_try(work, args.overrides)
    if forced:
        print(json.dumps(forced), flush=True)
    result = {"targets": args.targets, "invocations": args.invocations, "tries": rows, "force_while_reading": forced,
              "clean": sum(r["clean"] for r in rows) + int(bool(forced and forced["clean"])),
              "cases": len(rows) + int(forced is not None), "work": str(work)}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"clean: {result['clean']}/{result['cases']}")
    return 0 if result["clean"] == result["cases"] else 1


if __name__ == "__main__":
    sys.exit(main())
