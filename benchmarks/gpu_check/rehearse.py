"""The lent window rehearsed on this CPU, so that the first GPU contact is not the first run
of its code (``make gpu-check-rehearse``; CI runs it).

It packs the carries exactly as for the window (the burst's data at the GPU recipe's size,
the real SmolLM2 GGUF cut in two, the `gguf` wheel) and checks the plan against the
device's limits with their real sizes; then runs call 1 and call 2 with the same parts,
the same hand-off through a folder standing in for the machine's /tmp, and the same
returned files, at CPU sizes (``--size cpu --device cpu``). It fails when the plan breaks
a limit, a carry is over 64 MiB with the repository, a part does not end ``ok``, or the
returned files break the device's limits on what comes back.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.gpu_check.calls import PACK_DIR, window
from benchmarks.gpu_check.environment import REPO, RunEnvironment
from benchmarks.gpu_check.limits import RETURN_FILE_BYTES, RETURN_FILES, RETURN_NAME
from benchmarks.gpu_check.parts import Call

WHEELS = REPO / PACK_DIR / "wheels"
SOURCES = Path(os.environ.get("NUGGET_SOURCES_DIR", "~/.cache/nugget-pipeline/sources"))


def returned_errors(out: Path) -> list[str]:
    """What breaks the device's limits on returned files (count, size, names, depth)."""
    files = [p for p in out.rglob("*") if p.is_file()]
    errors = [f"{len(files)} returned files > {RETURN_FILES}"] if len(files) > RETURN_FILES else []
    for f in files:
        rel = f.relative_to(out)
        if f.stat().st_size > RETURN_FILE_BYTES:
            errors.append(f"{rel}: {f.stat().st_size:,} bytes > {RETURN_FILE_BYTES:,}")
        if len(rel.parts) > 3 or not all(RETURN_NAME.match(part) for part in rel.parts):
            errors.append(f"{rel}: a name or depth the device does not return")
    return errors


def run_call(call: Call, env: RunEnvironment, out: Path) -> list[str]:
    """Run ``call`` as the device would; the problems found (failed parts, returned files)."""
    from benchmarks.gpu_check.results import write_results
    from benchmarks.gpu_check.runner import CallRunner
    from benchmarks.gpu_check.summary import render_call

    shutil.rmtree(env.work, ignore_errors=True)
    records = CallRunner(call, env, env.work).run()
    summary = render_call(env.work)
    write_results(env.work, out, call.number, summary)
    print(summary, flush=True)
    problems = [f"call {call.number}: {r['part']} {r['status']} ({r.get('reason') or 'rc ' + str(r['rc'])}, "
                f"log {env.work / r['log']})" for r in records if r["status"] != "ok"]
    return problems + [f"call {call.number}: {e}" for e in returned_errors(out)]


def collected_problems(returned: Path, results: Path) -> list[str]:
    """Collect what the calls returned as after a window, and check the generated page shows
    every headline experiment the calls ran (the page reads what collect wrote)."""
    from benchmarks.gpu_check.collect import collect
    from benchmarks.gpu_check.headline import burst_cells
    from benchmarks.gpu_check.page import render

    roots = collect(returned, results)
    cells = {k: v for root in roots for k, v in burst_cells(root).items()}
    page = render(results)
    missing = sorted({"nugget_ae r=0.1", "nugget_ae r=0.05", "nugget_ae r=0.25", "nugget2d r=0.1", "icae r=0.1",
                      "nugget2d-icae r=0.1"} - set(cells))
    problems = [f"collect: no result for {m} in the returned files" for m in missing]
    problems += [f"page: {key}'s cell is empty" for key, c in cells.items() if c.get("value") is None]
    row = next((line for line in page.splitlines() if line.startswith("| Nugget AE BLEU, r = 0.1 |")), "")
    if not row or "never run" in row:
        problems.append(f"page: the collected window does not show in the headline table: {row!r}")
    return problems


def rehearse(root: Path | None = None, keep: bool = False, sources: Path = SOURCES) -> int:
    from benchmarks.gpu_check.pack import pack
    from benchmarks.gpu_check.plan import plan_errors, render
    from benchmarks.gpu_check.wheels import image_packages

    start = time.monotonic()
    own = root is None
    root = root or Path(tempfile.mkdtemp(prefix="gpu-window-"))
    try:
        sizes = pack(REPO, WHEELS, sources.expanduser(), sys.executable, image_packages(), download=True)
        calls, rotation = window()
        print(render(calls, rotation, sizes), flush=True)
        packed_s = time.monotonic() - start
        problems = [f"plan: {e}" for e in plan_errors(calls, sizes)]
        for call in calls:
            env = RunEnvironment.for_mode("rehearsal", work=root / f"call{call.number}", root=root)
            problems += run_call(call, env, root / "out" / f"call{call.number}")
        problems += collected_problems(root / "out", root / "results")
        took = time.monotonic() - start
        print(f"\nrehearsal of the GPU window on CPU: {took:.0f} s (pack {packed_s:.0f} s, the two calls "
              f"{took - packed_s:.0f} s); {len(problems)} problem(s)")
        for p in problems:
            print(f"  REHEARSAL PROBLEM: {p}")
        return 1 if problems else 0
    finally:
        if own and not keep:
            shutil.rmtree(root, ignore_errors=True)
