"""Rehearse a GPU profile on CPU: its whole DAG at rehearsal sizes, checked end to end.

    python -m tests.rehearsal.run --profile paper [--root DIR] [key=value ...]
    make rehearse PROFILE=paper|gpu1

Writes the profile's external inputs as local fixtures in their published layouts
(`tests.rehearsal.inputs`; profile=paper only: gpu1 reads the offline sources), runs
``pipelines/full.py profile=<p> rehearsal=true`` on a private local Ray, and fails unless
the run finished with every stage of the profile's DAG run or cached, printed no
traceback, and its report rendered every table with at least one measured cell. Prints
the wall time, the stages and the report's path. A failing stage is named by the
pipeline's own error, with the config sections the stage reads.
"""

from __future__ import annotations

import argparse
import csv
import os
import re
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PROFILES = ("gpu1", "paper")
NOT_MEASURED = ("", "not run in this profile")
STAGE_LINE = re.compile(r"\] (\S+)\s+(done|cached|reused)\b")
TRACEBACK = "Traceback (most recent call last)"
# "(RayTrainWorker pid=12, ip=...) " on a worker's lines, in colour on a terminal
RAY_PREFIX = re.compile(r"^(?:\x1b\[[0-9;]*m)?\([^)]*pid=\d+[^)]*\)(?:\x1b\[[0-9;]*m)? ?")


def traceback_excerpts(output: str, before: int = 3, limit: int = 60) -> list[str]:
    """Each traceback in ``output`` with the ``before`` lines that precede it, up to its
    exception line (the first line after the frames that is not indented; Ray's worker
    prefix removed), at most
    ``limit`` lines each. CI shows only the tail of a run, so a failing rehearsal repeats
    them at its end instead of leaving them hundreds of lines up."""
    lines = [RAY_PREFIX.sub("", line) for line in output.splitlines()]
    excerpts = []
    for i, line in enumerate(lines):
        if TRACEBACK not in line:
            continue
        end = i + 1
        while end < len(lines) and (lines[end].startswith((" ", "\t")) or not lines[end].strip()):
            end += 1
        block = lines[max(0, i - before):min(end + 1, len(lines))]
        if len(block) > limit:
            block = block[:limit // 2] + [f"... ({len(block) - limit} lines) ..."] + block[-limit // 2:]
        excerpts.append("\n".join(block))
    return excerpts


def expected_tables(sentence_counts: list[int]) -> list[str]:
    """The ids of the report's table files (``tables/<id>.csv``): every table with a
    published source (`stages.report.published`), RE table 8 once per sentence count."""
    from stages.report.published import SOURCES
    from stages.report.re_tables import TABLE8, restoration_table_id

    return [t for name in SOURCES
            for t in ([restoration_table_id(k) for k in sentence_counts] if name == TABLE8 else [name])]


def unrendered_tables(report_dir: Path, tables: list[str]) -> list[str]:
    """The ``tables`` (ids) the report lacks or that hold no measured cell (a column named
    '... measured' with a value), one line each."""
    problems = []
    for name in tables:
        path = report_dir / "tables" / f"{name}.csv"
        if not path.is_file():
            problems.append(f"{name}: no {path.name} in {report_dir / 'tables'}")
            continue
        with path.open(newline="") as fh:
            rows = list(csv.DictReader(fh))
        measured = [c for c in (rows[0] if rows else {}) if c.endswith("measured")]
        if not any(r[c].strip() not in NOT_MEASURED for r in rows for c in measured):
            problems.append(f"{name}: no measured cell ({len(rows)} rows, columns {measured})")
    return problems


def latest_report(root: Path) -> Path:
    """The report stage's newest complete output under ``root``."""
    done = [p.parent for p in (root / "report").glob("*/_COMPLETE")]
    if not done:
        raise SystemExit(f"rehearsal: no complete report under {root / 'report'}")
    return max(done, key=lambda p: (p / "_COMPLETE").stat().st_mtime)


def _pipeline(profile: str, root: Path, inputs: list[str], extra: list[str], log: Path) -> tuple[int, str]:
    """Run the pipeline, its output to the console and to ``log``; (exit status, output)."""
    # as `make run`'s head: no preemption watcher on one node (pipelines.cli binds Ray to 127.0.0.1 itself)
    # and every stage and training worker under the device guard (stages.common.device_guard)
    env = {**os.environ, "NUGGET_ARTIFACT_ROOT": str(root), "RAY_TRAIN_ENABLE_PREEMPTION_WATCHER": "0",
           "PYTHONUNBUFFERED": "1", "NUGGET_DEVICE_GUARD": "1"}
    # where it runs and records, not what: on both sides of the rehearsal's size-only check
    command = [sys.executable, str(REPO / "pipelines" / "full.py"), f"profile={profile}", "rehearsal=true",
               f"run.artifact_root={root}", f"run.tracking_uri=sqlite:///{root}/mlflow.db", *inputs, *extra]
    lines = []
    with subprocess.Popen(command, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, bufsize=1) as proc, log.open("w") as out:
        assert proc.stdout is not None
        for line in proc.stdout:
            sys.stdout.write(line)
            out.write(line)
            lines.append(line)
    return proc.returncode, "".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--profile", choices=PROFILES, required=True)
    parser.add_argument("--root", type=Path, default=None,
                        help="artifact root of the rehearsal (default: $NUGGET_ARTIFACT_ROOT/rehearsal-<profile>)")
    parser.add_argument("overrides", nargs="*", help="key=value overrides, after the rehearsal's")
    args = parser.parse_args(argv)
    base = Path(os.environ.get("NUGGET_ARTIFACT_ROOT", Path.home() / "nugget-artifacts")).expanduser()
    root = (args.root or base / f"rehearsal-{args.profile}").resolve()
    root.mkdir(parents=True, exist_ok=True)

    start = time.monotonic()
    inputs: list[str] = []
    if args.profile == "paper":
        from tests.rehearsal.inputs import ensure_paper_inputs

        inputs = ensure_paper_inputs(root / "inputs")
        print(f"rehearsal: profile=paper's inputs as local fixtures in {root / 'inputs'} "
              f"({time.monotonic() - start:.0f} s)", flush=True)
    status, output = _pipeline(args.profile, root, inputs, args.overrides, root / "rehearsal.log")
    wall = time.monotonic() - start

    from stages.config import load_config
    from stages.registry import DAG

    # the profile's DAG: without the stages its config switches off (`Dag.for_config`)
    graph = DAG.for_config(load_config([f"profile={args.profile}", "rehearsal=true", *inputs, *args.overrides]))
    stages = dict(STAGE_LINE.findall(output))
    problems = []
    if status != 0:
        problems.append(f"the pipeline exited with status {status} (its error above names the stage)")
    missing = [s for s in graph.order if s not in stages]
    if missing and status == 0:
        problems.append(f"stages neither run nor cached: {missing}")
    tracebacks = output.count(TRACEBACK)
    if tracebacks:
        problems.append(f"{tracebacks} traceback(s) in the output ({root / 'rehearsal.log'})")
    report = None
    if status == 0:
        counts = load_config([f"profile={args.profile}", "rehearsal=true", *inputs, *args.overrides]).train.re
        report = latest_report(root)
        problems += unrendered_tables(report, expected_tables(counts.sentence_counts))
    ran = sum(1 for v in stages.values() if v != "cached")
    print(f"\nrehearsal of profile={args.profile}: {wall:.0f} s wall, {len(stages)}/{len(graph.order)} stages "
          f"({ran} run, {len(stages) - ran} cached), {tracebacks} tracebacks")
    if report is not None:
        print(f"report: {report / 'report.md'}")
    for n, excerpt in enumerate(traceback_excerpts(output), 1):
        print(f"\n--- traceback {n} of {tracebacks} in the output ---\n{excerpt}")
    for problem in problems:
        print(f"REHEARSAL FAILED: {problem}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
