"""One screen per call: part statuses and times, pytest counts and failing tests, the
benchmarks' headline rows, profile=gpu1's stage table, and what did not run.

Benchmark results are read generically (each ``.md`` a benchmark wrote: its first line and
the first rows of its first table), so a column added or renamed there needs no change here.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

from benchmarks.gpu_check.headline import burst_cells

TABLE_ROWS = 4  # data rows shown per benchmark table
REASON_CHARS = 100


def _load(path: Path) -> dict:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}


def _short(text: str) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= REASON_CHARS else text[: REASON_CHARS - 3] + "..."


def cell(c: dict | None) -> str:
    """A measured value as ``12.34 [10.00, 14.50] (n=200)``, its flags after it; "—" when none."""
    if not c or c.get("value") is None:
        return "—"
    text = f"{c['value']:.2f}"
    if c.get("low") is not None and c.get("high") is not None:
        text += f" [{c['low']:.2f}, {c['high']:.2f}]"
    if c.get("n"):
        text += f" (n={c['n']})"
    return text + (f" ⚠ {c['flags']}" if c.get("flags") else "")


def parts_table(status: dict) -> list[str]:
    lines = ["| part | status | s | limit s | note |", "|---|---|---:|---:|---|"]
    for r in status.get("parts", []):
        note = r.get("reason") or ("" if r.get("status") == "ok" else f"rc {r.get('rc')}, see {r.get('log')}")
        lines.append(f"| {r['part']} | {r['status']} | {r.get('seconds', 0):.0f} | {r.get('timeout_s', '')} | "
                     f"{_short(note)} |")
    return lines


def junit_results(junit: Path) -> tuple[dict[str, int], list[str]]:
    """(passed / failed / error / skipped counts, failing test ids) of one junit.xml."""
    root = ET.parse(junit).getroot()
    counts = {"passed": 0, "failed": 0, "error": 0, "skipped": 0}
    failing = []
    for case in root.iter("testcase"):
        kinds = {child.tag for child in case}
        kind = next((k for k in ("failure", "error", "skipped") if k in kinds), "passed")
        counts[{"failure": "failed"}.get(kind, kind)] += 1
        if kind in ("failure", "error"):
            failing.append(f"{case.get('classname', '')}::{case.get('name', '')}")
    return counts, failing


def pytest_counts(folder: Path) -> dict[str, int] | None:
    """The counts of every readable junit.xml under ``folder`` together; None when there is none."""
    total: dict[str, int] | None = None
    for junit in sorted(folder.rglob("junit*.xml")):
        try:
            counts, _ = junit_results(junit)
        except (ET.ParseError, OSError):
            continue
        total = {k: (total or {}).get(k, 0) + n for k, n in counts.items()}
    return total


def pytest_lines(call_dir: Path) -> list[str]:
    lines = []
    for junit in sorted(call_dir.rglob("junit*.xml")):
        try:
            counts, failing = junit_results(junit)
        except (ET.ParseError, OSError) as exc:
            lines.append(f"- {junit.relative_to(call_dir)}: unreadable ({exc})")
            continue
        lines.append("- " + ", ".join(f"{n} {k}" for k, n in counts.items()) + f" ({junit.relative_to(call_dir)})")
        lines += [f"  - FAILED {name}" for name in failing]
    return lines


def first_table(md: str, rows: int = TABLE_ROWS) -> list[str]:
    """The first line of a results .md and its first table's header and first ``rows`` rows."""
    lines = md.splitlines()
    head = [lines[0]] if lines else []
    table: list[str] = []
    for line in lines:
        if line.startswith("|"):
            table.append(line)
        elif table:
            break
    shown = table[: 2 + rows]
    if len(table) > len(shown):
        shown.append(f"| ... {len(table) - len(shown)} more rows |")
    return head + shown


def benchmark_lines(call_dir: Path, skip: set[str]) -> list[str]:
    lines = []
    for md in sorted(call_dir.rglob("*.md")):
        if md.parent.name in skip or md.name.startswith("call"):
            continue
        lines += [f"`{md.relative_to(call_dir)}`:", *first_table(md.read_text(errors="replace")), ""]
    return lines


def stage_lines(stages: dict) -> list[str]:
    if not stages:
        return []
    lines = ["| stage | status | s | peak GiB (GPU) | beside |", "|---|---|---:|---:|---|"]
    for s in stages.get("stages", []):
        peak = "" if s.get("peak_gib") is None else f"{s['peak_gib']:.1f}"
        seconds = "" if s.get("seconds") is None else f"{s['seconds']:.0f}"
        lines.append(f"| {s['stage']} | {s['status']} | {seconds} | {peak} | {', '.join(s.get('overlapped', []))} |")
    if stages.get("stopped"):
        lines.append(f"\nstopped: {stages['stopped']}")
    for note in stages.get("notes", []):
        lines.append(f"\nnote: {note}")
    return lines


def render_call(call_dir: Path) -> str:
    status = _load(call_dir / "status.json")
    env = _load(call_dir / "gpu-info" / "env.json")
    title = f"## Call {status.get('call', '?')}: {status.get('title', '')}"
    where = ", ".join(str(env[k]) for k in ("device_name", "torch", "transformers") if env.get(k)) or "device unknown"
    if env and not env.get("cuda_available"):
        where += " (torch saw NO CUDA device)"
    lines = [title, "", f"started {status.get('started_utc', '?')}, mode {status.get('mode', '?')}, {where}; "
             f"budget {status.get('budget_s', '?')} s" + ("" if status.get("finished") else ", NOT FINISHED"), ""]
    lines += parts_table(status) + [""]
    cells = burst_cells(call_dir, "headline-*/*.json")
    if cells:
        lines += ["Headline burst (BLEU, 95% interval over documents, n):", "",
                  *(f"- {key}: {cell(c)}" for key, c in cells.items()), ""]
    tests = pytest_lines(call_dir)
    if tests:
        lines += ["pytest:", *tests, ""]
    bench = benchmark_lines(call_dir, skip={"gpu1", "gpu-info", "headline-ae", "headline-2d"})
    if bench:
        lines += ["Benchmarks (first rows of each results table):", "", *bench]
    stages = stage_lines(_load(call_dir / "gpu1" / "stages.json"))
    if stages:
        lines += ["profile=gpu1, short run:", "", *stages, ""]
    not_run = [f"- {r['part']}: {r['status']}: {_short(r.get('reason') or 'rc ' + str(r.get('rc')))}"
               for r in status.get("parts", []) if r.get("status") not in ("ok",)]
    lines += ["Did not run or did not pass:", *(not_run or ["- nothing: every part ran and exited 0"]), ""]
    return "\n".join(lines)


def render_all(root: Path) -> str:
    calls = sorted(p.parent for p in root.glob("call*/status.json"))
    lines = [f"# GPU check {root.name}", ""]
    if not calls:
        lines.append("no call results here")
    for call_dir in calls:
        lines += [render_call(call_dir), ""]
    return "\n".join(lines)
