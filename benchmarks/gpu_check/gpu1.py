"""A short ``profile=gpu1`` of every stage on a user's own CUDA machine (`calls.OWN_MACHINE`).

Only sizes shrink (tens of steps per training job, fewer evaluated examples, two of the
sweep's four ratios: each trial one the profile runs), checked against the profile with
the rehearsal's rule (`stages.config.rehearsal.non_size_differences`) minus the widths a
rehearsal may also shrink: every model keeps its shape, batch sizes and generation
lengths stay, so time and memory per step are the profile's. The LM is the profile's own
(the real SmolLM2 from the offline sources). Each stage's wall time and the GPU's peak memory while it ran go to
``stages.json`` / ``stages.md`` after every stage event, so a run stopped at its time
limit still leaves the stages finished so far.
"""

from __future__ import annotations

import json
import os
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.gpu_check.environment import REPO
from benchmarks.gpu_check.gpumem import Sampler, default_reader
from benchmarks.gpu_check.stagelog import StageLog

STEPS = 20
TRAIN_JOBS = ("nugget", "nugget2d", "nugget2d_ae", "nugget2d_ar", "nugget2d_ft", "full_ft", "baselines",
              "nugget_lm", "re", "re_retrieval")
SHORT = [
    *(f"train.{job}.{key}={value}" for job in TRAIN_JOBS for key, value in (
        ("max_steps", STEPS), ("eval_every", STEPS), ("checkpoint_every", STEPS), ("warmup_steps", 2),
        ("dev_examples", 32))),
    f"train.sweep.max_steps={STEPS}", "train.sweep.ratios=[0.05,0.25]",
    "data.re.max_train_examples=2048", "data.re.max_dev_examples=128",
    "eval.max_examples=32", "eval.analysis_docs=16", "eval.highlight_docs=2", "eval.probe_docs=32",
    "eval.lm.max_segments=8", "eval.qa.max_examples=32", "eval.summarization.max_examples=32",
    "eval.autoencoding.max_docs=32", "eval.autoencoding.analysis_docs=16", "eval.autoencoding.highlight_docs=2",
    "eval.nugget_lm.max_docs=8", "eval.re.max_examples=64", "eval.re.max_queries=64",
    "calibrate.threshold.sample_docs=64", "calibrate.threshold.heldout_docs=32",
]
NOTES = [
    f"{STEPS} steps per training job and capped evaluations: per-step time and memory are the profile's, "
    "stage totals are not",
    "peak GiB: the device's used memory while the stage ran (all processes; stages listed beside it share it)",
]
STOP_GRACE_S = 20  # SIGINT, then this long for Ray to shut down, then SIGKILL


def overrides(sources: Path, artifacts: Path) -> list[str]:
    return ["profile=gpu1", *SHORT, f"run.sources_dir={sources}", f"run.artifact_root={artifacts}"]


def _write(out: Path, log: StageLog, sampler: Sampler | None, stopped: str, finished: bool) -> None:
    rows = log.table(sampler.samples if sampler else [])
    if finished:  # the pipeline has exited: a stage it never ended was cut off
        for row in rows:
            row["status"] = "cut off" if row["status"] == "running" else row["status"]
    notes = NOTES if sampler else [*NOTES, "no GPU memory reader (pynvml / nvidia-smi): no peaks"]
    data = {"stages": rows, "finished": finished, "stopped": stopped, "notes": notes}
    (out / "stages.json").write_text(json.dumps(data, indent=2) + "\n")
    lines = ["| stage | status | s | peak GiB |", "|---|---|---:|---:|"]
    lines += [f"| {r['stage']} | {r['status']} | {r['seconds'] or ''} | {r['peak_gib'] or ''} |" for r in rows]
    (out / "stages.md").write_text("\n".join(lines + [""] + [f"- {n}" for n in notes]) + "\n")


def run_gpu1(sources: Path, out: Path, max_seconds: float, artifacts: Path | None = None,
             python: str = sys.executable) -> int:
    out.mkdir(parents=True, exist_ok=True)
    artifacts = artifacts or Path(tempfile.gettempdir()) / "gpu-check-gpu1-artifacts"
    shutil.rmtree(artifacts, ignore_errors=True)
    cmd = [python, str(REPO / "pipelines" / "full.py"), *overrides(sources, artifacts)]
    (out / "command.txt").write_text(" ".join(cmd) + "\n")
    reader = default_reader()
    sampler = Sampler(reader, out / "gpu-memory.csv").start() if reader else None
    log, stopped = StageLog(), ""
    deadline = time.monotonic() + max_seconds
    proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1,
                            start_new_session=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    _write(out, log, sampler, stopped, False)
    with (out / "pipeline.log").open("w") as text:
        os.set_blocking(proc.stdout.fileno(), True)
        sel = selectors.DefaultSelector()
        sel.register(proc.stdout, selectors.EVENT_READ)
        while True:
            if time.monotonic() > deadline:
                stopped = f"stopped after {max_seconds:.0f} s (the part's budget): stages not listed did not start"
                _stop(proc)
                break
            if not sel.select(timeout=1.0):
                _write(out, log, sampler, stopped, False)  # running stages' peaks so far
                continue
            line = proc.stdout.readline()
            if not line:
                break
            text.write(line)
            text.flush()
            if log.feed(line):
                _write(out, log, sampler, stopped, False)
    rc = proc.wait()
    if sampler:
        sampler.stop()
    _write(out, log, sampler, stopped, True)
    for report in sorted(artifacts.glob("report/*/report.md")):
        shutil.copy2(report, out / "report.md")
    return 0 if stopped else rc


def _stop(proc: subprocess.Popen) -> None:
    for sig, wait in ((signal.SIGINT, STOP_GRACE_S), (signal.SIGKILL, 10)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue
