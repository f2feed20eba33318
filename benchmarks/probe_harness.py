"""The machinery of `probe_replay`: a case (what to set up and run, what it must show),
the CLI run in its own session with a timeout, the judgement of its output, and the row and
table it becomes. The cases themselves are in ``probe_replay.py``."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from kill_anywhere import REPO  # noqa: E402

PY = sys.executable
FULL = [PY, "pipelines/full.py"]
STAGE = [PY, "-m", "pipelines.stage"]
RAY_STARTED = "Started a local Ray instance"


@dataclass
class Expect:
    """What one case must show: its exit code, strings the output must / must not hold,
    and a bound on its seconds; ``extra`` holds checks computed by the case itself."""

    code: int
    contains: list[str] = field(default_factory=list)
    absent: list[str] = field(default_factory=list)
    max_seconds: float | None = None
    ray: bool = False  # a case that must start Ray; the others must not
    extra: dict[str, bool] = field(default_factory=dict)


@dataclass
class Ran:
    argv: list[str]
    code: int
    seconds: float
    output: str
    env: dict[str, str] = field(default_factory=dict)  # the variables the case set
    then: Ran | None = None  # a second command of the same case (its time is in ``seconds``)


@dataclass
class Case:
    cls: str
    name: str
    run: Callable[[Path, Path], tuple[Ran, Expect]]  # (root copy, work dir) -> what ran, what it must show
    ray: bool = False


# -- running the CLI -----------------------------------------------------------------------

def cli_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAY_", "MLFLOW_"))}
    return {**env, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1", **(extra or {})}


def run_cli(argv: list[str], env: dict[str, str] | None = None, timeout: float = 120) -> Ran:
    """``argv`` in its own session: a command that hangs past ``timeout`` is killed with
    everything it started (a Ray it launched included), exit 124."""
    start = time.time()
    proc = subprocess.Popen(argv, cwd=REPO, env=cli_env(env), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        output, _ = proc.communicate(timeout=timeout)
        code = proc.returncode
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        output, _ = proc.communicate()
        code, output = 124, output + f"\n[probe_replay: killed after {timeout:g} s]"
    return Ran(argv, code, round(time.time() - start, 1), output, env or {})


def shown(ran: Ran, root: Path, work: Path) -> str:
    """The command as a reader would paste it, with ``<root>`` / ``<work>`` placeholders."""
    words = [f"{k}={v}" for k, v in ran.env.items()]
    words += ["python" if a == PY else a for a in ran.argv]
    text = " ".join(_quote(w) for w in words)
    text = text.replace(str(root), "<root>").replace(str(work), "<work>").replace(str(REPO) + "/", "")
    return f"{text}; then {shown(ran.then, root, work)}" if ran.then else text


def _quote(word: str) -> str:
    return f"'{word}'" if re.search(r"[\[\]\s*?]", word) else word


def judge(ran: Ran, expect: Expect) -> dict[str, bool]:
    """Each expectation of ``expect`` -> whether ``ran`` met it."""
    checks = {f"exit {expect.code}": ran.code == expect.code, "no traceback": "Traceback" not in ran.output
              or expect.ray}  # a failed stage shows its task's traceback, as designed
    if not expect.ray:
        checks["no Ray started"] = RAY_STARTED not in ran.output
    for text in expect.contains:
        checks[f"says {text!r}"] = text in ran.output
    for text in expect.absent:
        checks[f"does not say {text!r}"] = text not in ran.output
    if expect.max_seconds is not None:
        checks[f"within {expect.max_seconds:g} s"] = ran.seconds <= expect.max_seconds
    checks.update(expect.extra)
    return checks


def key_lines(ran: Ran, expect: Expect, limit: int = 4) -> list[str]:
    """The lines of the output that hold an expected string, else the error lines."""
    lines = [ln.strip() for ln in ran.output.splitlines() if ln.strip()]
    picked = [ln for ln in lines if ln.startswith("error") or any(t in ln for t in expect.contains)]
    picked = picked or [ln for ln in lines if ln.startswith("preflight:")] or lines[-2:]
    return [ln if len(ln) <= 400 else ln[:397] + "..." for ln in dict.fromkeys(picked)][:limit]


def run_case(case: Case, base: Path, work: Path) -> dict[str, Any]:
    root = work / case.name / "root"
    shutil.rmtree(root.parent, ignore_errors=True)
    root.parent.mkdir(parents=True)
    shutil.copytree(base, root, symlinks=True)
    ran, expect = case.run(root, root.parent)
    checks = judge(ran, expect)
    return {"class": case.cls, "case": case.name, "command": shown(ran, root, root.parent),
            "exit": ran.code if ran.then is None else f"{ran.code}; {ran.then.code}",
            "seconds": ran.seconds, "key_lines": [ln.replace(str(root), "<root>").replace(str(root.parent), "<work>")
                                                 for ln in key_lines(ran, expect)],
            "checks": checks, "clean": all(checks.values())}


def table(rows: list[dict[str, Any]]) -> str:
    lines = ["| class | case | command | exit | s | clean |", "| --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        command = r["command"].replace("|", "\\|")
        lines.append(f"| {r['class']} | {r['case']} | `{command}` | {r['exit']} | {r['seconds']:g} | "
                     f"{'yes' if r['clean'] else 'NO'} |")
    return "\n".join(lines)
