"""docs/gpu-results.md, generated: the newest GPU number of every headline experiment, test
group and benchmark beside the papers' and the CPU profile's, each with its date, commit
and device (``python -m benchmarks.gpu_check page``; `collect` runs it).

It reads every window folder under ``benchmarks/results/gpu/<UTC date>/`` (its
``call*/status.json``, the burst's result files, junit.xml and the benchmarks' ``.md``),
``cpu_reference.json`` (the CPU profile's numbers) and the papers' numbers the burst
states (`benchmarks.headline`'s references). A cell no window measured says so.
"""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.gpu_check.cpu_reference import load as load_cpu_reference
from benchmarks.gpu_check.headline import PAPER, burst_cells
from benchmarks.gpu_check.rotation import RESULTS, ROTATING, order
from benchmarks.gpu_check.summary import cell, first_table, pytest_counts

PAGE = Path(__file__).resolve().parents[2] / "docs" / "gpu-results.md"
EXPERIMENTS = (  # (key, what): the rows of the headline table, in the papers' order
    ("nugget_ae r=0.05", "Nugget AE BLEU, r = 0.05"),
    ("nugget_ae r=0.1", "Nugget AE BLEU, r = 0.1"),
    ("nugget_ae r=0.25", "Nugget AE BLEU, r = 0.25"),
    ("nugget2d r=0.1", "Nugget2D AE BLEU, r = 0.1 (SmolLM2-135M)"),
    ("icae r=0.1", "ICAE AE BLEU, r = 0.1 (SmolLM2-135M)"),
    ("nugget2d-icae r=0.1", "Nugget2D − ICAE BLEU, r = 0.1, paired"),
    ("nugget2d r=0.05", "Nugget2D AE BLEU, r = 0.05 (SmolLM2-135M)"),
    ("icae r=0.05", "ICAE AE BLEU, r = 0.05 (SmolLM2-135M)"),
)
TEST_GROUPS = (("pytest-gpu-core", "`gpu` tests without Ray (equivalence, decoding)"),
               ("pytest-gpu-pipeline", "`gpu` tests of the stages and Ray Train (own machine)"))
BENCHMARKS = (("decode", "decode ≤ 1.3× its roofline"), ("train-7b", "Nugget2D step ≤ 1.1× Full FT (joint pass)"),
              ("serving", "largest batch and tokens/s at 32k"), ("train-bart-large", "Nugget vs BART step"))


def windows(results: Path = RESULTS) -> list[Path]:
    """Window folders, newest first."""
    return sorted((p for p in results.iterdir() if p.is_dir() and (p / "summary.md").is_file()), reverse=True) \
        if results.is_dir() else []


def env_of(window: Path) -> dict:
    for env in sorted(window.glob("call*/gpu-info/env.json")):
        try:
            return json.loads(env.read_text())
        except (OSError, ValueError):
            continue
    return {}


def where(window: Path) -> str:
    env = env_of(window)
    commit = str(env.get("commit") or "?")[:12]
    return f"{window.name}, {commit}, {env.get('device_name', 'device ?')}"


def newest_part(found: list[Path], name: str) -> tuple[Path, Path] | None:
    """(window, part folder) of the newest window where part ``name`` ran to the end."""
    for window in found:
        for status_file in sorted(window.glob("call*/status.json")):
            parts = json.loads(status_file.read_text()).get("parts", [])
            if any(p.get("part") == name and p.get("status") == "ok" for p in parts):
                return window, status_file.parent / name
    return None


def headline_lines(found: list[Path]) -> list[str]:
    cpu = load_cpu_reference()
    cpu_label = f"CPU profile={cpu.get('profile', '?')} ({cpu.get('date', '?')}, {cpu.get('commit', '?')})"
    lines = ["| experiment | GPU, newest | window (date, commit, device) | paper | " + cpu_label + " |",
             "|---|---|---|---|---|"]
    cells_by_window = [(window, burst_cells(window)) for window in found]  # read once, newest first
    for key, what in EXPERIMENTS:
        gpu, at = None, "never run"
        for window, cells in cells_by_window:
            if key in cells:
                gpu, at = cells[key], where(window)
                break
        lines.append(f"| {what} | {cell(gpu)} | {at} | {PAPER.get(key, '—')} | {cell(cpu['rows'].get(key))} |")
    lines += ["", "BLEU: sacrebleu corpus BLEU (0-100) of the decoded documents against the inputs; intervals: "
              "95% percentile bootstrap over documents (paired for the difference); n = held-out documents. "
              "⚠ marks a model whose BLEU is not above 10, the report's competence floor for reconstruction "
              "(it does not do the task: its number is no result), and a difference standing on one."]
    return lines


def tests_lines(found: list[Path]) -> list[str]:
    lines = ["| group | newest result | window |", "|---|---|---|"]
    for name, what in TEST_GROUPS:
        hit = newest_part(found, name)
        counts = pytest_counts(hit[1]) if hit else None
        text = ", ".join(f"{n} {k}" for k, n in counts.items()) if counts else "never run to the end"
        lines.append(f"| {what} | {text} | {where(hit[0]) if hit else '—'} |")
    return lines


def benchmark_lines(found: list[Path]) -> list[str]:
    lines = []
    for name, target in BENCHMARKS:
        hit = newest_part(found, name)
        lines.append(f"### {name} (target: {target})")
        if hit is None:
            lines += ["", "never run to the end in a window", ""]
            continue
        lines += ["", f"window {where(hit[0])}:", ""]
        for md in sorted(hit[1].glob("*.md")):
            lines += first_table(md.read_text(errors="replace")) + [""]
    return lines


def render(results: Path = RESULTS) -> str:
    found = windows(results)
    newest = f"newest window: {where(found[0])}" if found else (
        "no lent GPU window has run the two-call plan yet: every GPU cell below is '—'. The earlier "
        "H100 run of 2026-11-23 (another plan) left benchmarks/results/nugget2d_decode_cuda.md, "
        "nugget2d_train_overhead_cuda.md and docs/performance.md's GPU numbers")
    turn = [f"- {r.part.name}: last ran to the end {r.last_ok or 'never'}" for r in order(ROTATING, results)]
    return "\n".join([
        "# GPU results", "",
        "Generated by `python -m benchmarks.gpu_check page` (`collect` runs it) from "
        "`benchmarks/results/gpu/<UTC date>/`; do not edit. The plan that fills them: "
        "[performance.md](performance.md), \"A lent GPU window\".", "", newest + ".", "",
        "## The headline burst", "", *headline_lines(found), "",
        "## CUDA correctness", "", *tests_lines(found), "",
        "## Speed benchmarks (first rows of each results table)", "", *benchmark_lines(found),
        "## The rotation: whose turn in the next window", "", *turn, "",
    ])


def write_page(results: Path = RESULTS, page: Path = PAGE) -> Path:
    page.write_text(render(results))
    return page
