"""Unpack the files a GPU check returned into the layout to commit, and its summary.

``benchmarks/results/gpu/<UTC date of the run>/callN/`` holds call N's archive unpacked
(logs, status.json, benchmark results, stage table); ``summary.md`` beside them is
regenerated from every call found there, so calls collected one at a time add up.
"""

from __future__ import annotations

import json
import shutil
import tarfile
import tempfile
from pathlib import Path

from benchmarks.gpu_check.environment import REPO
from benchmarks.gpu_check.summary import render_all

RESULTS = REPO / "benchmarks" / "results" / "gpu"


def collect(returned: Path, results: Path = RESULTS) -> list[Path]:
    """Unpack every ``call*-results.tar.gz`` under ``returned``; the date folders written."""
    archives = sorted(returned.rglob("call*-results.tar.gz"))
    if not archives:
        raise SystemExit(f"gpu-check collect: no call*-results.tar.gz under {returned}")
    roots = set()
    for archive in archives:
        with tempfile.TemporaryDirectory() as tmp, tarfile.open(archive) as tar:
            tar.extractall(tmp, filter="data")  # no absolute paths, no links out of tmp
            status = json.loads((Path(tmp) / "status.json").read_text())
            root = results / status["started_utc"][:10]
            dest = root / f"call{status['call']}"
            if dest.exists():
                shutil.rmtree(dest)
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copytree(tmp, dest)
            roots.add(root)
    for root in roots:
        (root / "summary.md").write_text(render_all(root))
    return sorted(roots)
