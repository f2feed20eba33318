"""Kill-anywhere safety, measured: SIGKILL the driver at random points of a run, then check
what it left and that a rerun gives the uninterrupted run's outputs.

    python benchmarks/kill_anywhere.py --points 10 --out benchmarks/results/kill_anywhere.json

1. A reference run of the cut (``--targets``, a fresh artifact root) without interruption:
   its wall time T and, per stage, the sha256 table of its output files.
2. Per kill point (a fresh root each): start the driver (``pipelines/full.py``, its own
   session, a private Ray), SIGKILL it at a random time in (0.05 T, 0.95 T); one point
   (``--group-kills``) kills the driver's whole process group instead (driver, Ray, stage
   workers); ``--checkpoint-kills`` adds points killed as soon as a training checkpoint
   exists, so the rerun must resume from it. Then, after ``--settle`` seconds:
   - *looks complete only if it is*: every output the store calls complete has the
     reference's files, byte for byte, and passes the readers' check;
   - *no process left*: every process the driver started (polled while it ran) is gone;
   - after a rerun on the same root (exit 0): *no run RUNNING* in MLflow (the killed
     run's are marked FAILED by the rerun), *no scratch* (``.tmp-*``, ``.old-*``, the
     local scratch of object-store roots; ``.work-*`` only beside an unfinished key), and
     *identical outputs*: every stage's files equal the reference's, byte for byte, or
     differ only in the timing fields of a JSON file (``*seconds``, ``*_per_s``: how long
     the work took, which differs between any two runs; counted apart).
Writes one JSON with the per-point rows and the counts of clean cases.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import psutil

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from stages.framework.store import REMOTE_SCRATCH, ArtifactStore, CorruptArtifactError  # noqa: E402

DEFAULT_TARGETS = "corpus_stats,build_rr,train_nugget"
# outputs record how long their work took: those fields differ between any two runs
TIMING_SUFFIXES = ("seconds", "_per_s")
# a short training (two checkpoints) keeps ten kill points within a few minutes each
DEFAULT_OVERRIDES = ["train.nugget.max_steps=40", "train.nugget.checkpoint_every=20",
                     "train.nugget.eval_every=20", "run.num_cpus=2"]


def driver_command(root: Path, targets: str, overrides: list[str]) -> list[str]:
    return [sys.executable, str(REPO / "pipelines" / "full.py"), f"run.artifact_root={root}",
            f"run.targets=[{targets}]", *overrides]


def start_driver(root: Path, targets: str, overrides: list[str], log: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("RAY_ADDRESS", None)  # a private Ray: the driver owns everything it starts
    with log.open("ab") as fh:
        return subprocess.Popen(driver_command(root, targets, overrides), cwd=REPO, env=env,
                                stdout=fh, stderr=subprocess.STDOUT, start_new_session=True)


def descendants(pid: int) -> dict[int, float]:
    try:
        return {c.pid: c.create_time() for c in psutil.Process(pid).children(recursive=True)}
    except psutil.Error:
        return {}


def alive(known: dict[int, float]) -> list[str]:
    """The processes of ``known`` (pid -> start time) still running: ``pid name``."""
    left = []
    for pid, started in known.items():
        try:
            proc = psutil.Process(pid)
            if proc.create_time() == started and proc.status() != psutil.STATUS_ZOMBIE:
                left.append(f"{pid} {' '.join(proc.cmdline())[:120] or proc.name()}")
        except psutil.Error:
            continue
    return left


def outputs(root: Path) -> dict[str, dict[str, Any]]:
    """``{stage: {"key": key, "files": table, "intact": bool}}`` of every output the store
    calls complete (a stage with one key per run)."""
    store = ArtifactStore(str(root))
    found: dict[str, dict[str, Any]] = {}
    for stage_dir in sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")):
        for key_dir in sorted(p for p in stage_dir.iterdir() if not p.name.startswith(".")):
            if not key_dir.is_dir() or not store.is_complete(stage_dir.name, key_dir.name):
                continue
            try:
                files = store.artifact(stage_dir.name, key_dir.name).manifest["files"]
                intact = True
            except CorruptArtifactError:
                files, intact = {}, False
            found[stage_dir.name] = {"stage": stage_dir.name, "key": key_dir.name, "files": files,
                                     "intact": intact}
    return found


def leftovers(root: Path, complete: dict[str, dict[str, Any]]) -> list[str]:
    """Scratch and set-aside folders under ``root``; work spaces of finished keys."""
    left = [str(p) for p in root.glob("*/.tmp-*")] + [str(p) for p in root.glob("*/.old-*")]
    for work in root.glob("*/.work-*"):
        stage, key = work.parent.name, work.name.removeprefix(".work-")
        if complete.get(stage, {}).get("key") == key:
            left.append(str(work))
    for scratch in REMOTE_SCRATCH.glob("*") if REMOTE_SCRATCH.exists() else []:
        pid = scratch.name.split("-", 1)[0]
        if pid.isdigit() and not psutil.pid_exists(int(pid)):  # others' live scratch is not ours
            left.append(str(scratch))
    return left


def _without_timings(value: Any) -> Any:
    """A JSON value with its wall-clock measurements (``*seconds``, ``*_per_s``) dropped."""
    if isinstance(value, dict):
        return {k: _without_timings(v) for k, v in value.items() if not k.endswith(TIMING_SUFFIXES)}
    if isinstance(value, list):
        return [_without_timings(v) for v in value]
    return value


def differences(root: Path, mine: dict[str, Any], reference_root: Path, theirs: dict[str, Any]) -> list[str]:
    """Files of one stage's output that differ from the reference's (``file`` or, when only
    timing fields of a JSON file differ, ``file (timings only)``)."""
    found = []
    for rel in sorted(set(mine["files"]) | set(theirs["files"])):
        if mine["files"].get(rel) == theirs["files"].get(rel):
            continue
        a = root / mine["stage"] / mine["key"] / rel
        b = reference_root / theirs["stage"] / theirs["key"] / rel
        if rel.endswith(".json") and a.exists() and b.exists() and \
                _without_timings(json.loads(a.read_text())) == _without_timings(json.loads(b.read_text())):
            found.append(f"{rel} (timings only)")
        else:
            found.append(rel)
    return found


def checkpoints(root: Path) -> list[Path]:
    """Ray Train checkpoints in the work spaces of ``root`` (what a rerun resumes from)."""
    return [p for p in root.glob("*/.work-*/**/checkpoint_*") if p.is_dir()]


def running_runs(root: Path) -> int:
    from mlflow.tracking import MlflowClient

    db = root / "mlflow.db"
    if not db.exists():
        return 0
    client = MlflowClient(f"sqlite:///{db}")
    ids = [e.experiment_id for e in client.search_experiments()]
    return len(client.search_runs(ids, filter_string="attributes.status = 'RUNNING'", max_results=5000))


def run_to_end(root: Path, targets: str, overrides: list[str], log: Path) -> tuple[int, float]:
    start = time.time()
    proc = start_driver(root, targets, overrides, log)
    return proc.wait(), time.time() - start


def kill_point(index: int, at: float, group: bool, work: Path, targets: str, overrides: list[str],
               reference: dict[str, dict[str, Any]], settle: float) -> dict[str, Any]:
    root, log = work / f"point{index}", work / f"point{index}.log"
    proc = start_driver(root, targets, overrides, log)
    known: dict[int, float] = {}
    start = time.time()
    while proc.poll() is None and (time.time() - start < at if at >= 0 else not checkpoints(root)):
        known.update(descendants(proc.pid))
        time.sleep(0.2)
    at = time.time() - start
    finished_first = proc.poll() is not None
    try:
        if group:  # the session's processes outlive a finished driver: kill them all the same
            os.killpg(proc.pid, signal.SIGKILL)
        elif not finished_first:
            proc.kill()
    except ProcessLookupError:  # nothing of the run was left to kill
        pass
    proc.wait()
    time.sleep(settle)
    after_kill = outputs(root) if root.exists() else {}
    ref_root = work / "reference"

    def real_diffs(found: dict[str, Any], stage: str) -> list[str]:
        if stage not in found:
            return ["missing"]
        return [d for d in differences(root, found[stage], ref_root, reference[stage]) if "(timings only)" not in d]

    wrong = [s for s, o in after_kill.items() if not o["intact"] or real_diffs(after_kill, s)]
    row: dict[str, Any] = {
        "point": index, "kill_at_s": round(at, 1), "kill": "process group" if group else "driver",
        "finished_before_kill": finished_first, "complete_at_kill": sorted(after_kill),
        "checkpoints_at_kill": len(checkpoints(root)),
        "looks_complete_but_is_not": wrong, "processes_left": alive(known),
        "runs_running_after_kill": running_runs(root),
    }
    rc, seconds = run_to_end(root, targets, overrides, log)
    final = outputs(root)
    row.update({
        "rerun_exit": rc, "rerun_s": round(seconds, 1), "runs_running_after_rerun": running_runs(root),
        "scratch_left": leftovers(root, final),
        "differs_from_reference": {s: d for s in reference if (d := real_diffs(final, s))},
        "resumed_from_step": _resumed(root),
        "byte_identical_stages": sorted(s for s in reference if final.get(s, {}).get("files") == reference[s]["files"]),
    })
    row["clean"] = (not wrong and not row["processes_left"] and rc == 0 and not row["runs_running_after_rerun"]
                    and not row["scratch_left"] and not row["differs_from_reference"])
    return row


def _resumed(root: Path) -> dict[str, int]:
    """``resumed_from_step`` of each training output (-1: trained from scratch)."""
    found = {}
    for state in root.glob("*/*/trainer_state.json"):
        found[state.parent.parent.name] = json.loads(state.read_text()).get("resumed_from_step", -1)
    return found


def _write(out: Path, result: dict[str, Any]) -> None:
    """Written after every point, so a run cut short keeps what it measured."""
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--points", type=int, default=10)
    parser.add_argument("--group-kills", type=int, default=1, help="points that kill the whole process group")
    parser.add_argument("--checkpoint-kills", type=int, default=0,
                        help="extra points that kill the driver as soon as a training checkpoint exists")
    parser.add_argument("--targets", default=DEFAULT_TARGETS)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--settle", type=float, default=15.0, help="seconds between the kill and the checks")
    parser.add_argument("--work", type=Path, default=None, help="folder for the roots and logs (default: a temp dir)")
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results" / "kill_anywhere.json")
    parser.add_argument("overrides", nargs="*", default=DEFAULT_OVERRIDES)
    args = parser.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="kill-anywhere-"))
    work.mkdir(parents=True, exist_ok=True)
    rc, total = run_to_end(work / "reference", args.targets, args.overrides, work / "reference.log")
    if rc != 0:
        print(f"reference run failed (exit {rc}); see {work / 'reference.log'}", file=sys.stderr)
        return 1
    reference = outputs(work / "reference")
    print(f"reference: {total:.0f} s, stages {', '.join(reference)}", flush=True)
    rng = random.Random(args.seed)
    rows = []
    for i in range(args.points + args.checkpoint_kills):
        at = rng.uniform(0.05, 0.95) * total if i < args.points else -1.0  # -1: at the first checkpoint
        row = kill_point(i, at, args.points - args.group_kills <= i < args.points, work, args.targets, args.overrides,
                         reference, args.settle)
        rows.append(row)
        _write(args.out, {"targets": args.targets, "overrides": args.overrides, "reference_seconds": round(total, 1),
                          "points": len(rows), "rows": rows, "work": str(work), "partial": True})
        print(f"point {i}: kill {row['kill']} at {row['kill_at_s']} s, complete at kill "
              f"{row['complete_at_kill']}, processes left {len(row['processes_left'])}, rerun exit "
              f"{row['rerun_exit']}, RUNNING runs {row['runs_running_after_rerun']}, scratch "
              f"{len(row['scratch_left'])}, differs {row['differs_from_reference']} -> "
              f"{'clean' if row['clean'] else 'NOT CLEAN'}", flush=True)
    checks = {
        "no output looks complete unless it is": sum(not r["looks_complete_but_is_not"] for r in rows),
        "no process left behind": sum(not r["processes_left"] for r in rows),
        "rerun succeeds": sum(r["rerun_exit"] == 0 for r in rows),
        "no MLflow run left RUNNING": sum(not r["runs_running_after_rerun"] for r in rows),
        "no scratch left behind": sum(not r["scratch_left"] for r in rows),
        "rerun outputs identical to the reference (timing fields aside)": sum(not r["differs_from_reference"] for r in rows),
        "... and byte for byte": sum(len(r["byte_identical_stages"]) == len(reference) for r in rows),
        "all of the above": sum(r["clean"] for r in rows),
    }
    result = {"targets": args.targets, "overrides": args.overrides, "reference_seconds": round(total, 1),
              "points": len(rows), "checks_clean": checks, "rows": rows, "work": str(work)}
    _write(args.out, result)
    for name, clean in checks.items():
        print(f"{name:45s} {clean}/{len(rows)}")
    return 0 if checks["all of the above"] == len(rows) else 1


if __name__ == "__main__":
    sys.exit(main())
