"""Unpack the files a GPU check returned into the layout to commit, and its summary.

``benchmarks/results/gpu/<UTC date of the run>/callN/`` holds call N's archive unpacked
(logs, status.json, the burst's and the benchmarks' results); ``summary.md`` beside them is
regenerated from every call found there, so calls collected one at a time add up; so is
``efficiency.json`` (the share of the device's peak the window measured: the cost plan of
``nugget run --dry-run`` reads the newest) and docs/gpu-results.md (`page`).
"""

from __future__ import annotations

import json
import shutil
import tarfile
import tempfile
from pathlib import Path

from benchmarks.gpu_check.environment import REPO
from benchmarks.gpu_check.page import env_of, write_page
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
            fill_burst_intervals(dest)
            roots.add(root)
    for root in roots:
        (root / "summary.md").write_text(render_all(root))
        write_efficiency(root)
    if results == RESULTS:
        write_page(results)
    return sorted(roots)


def fill_burst_intervals(call_dir: Path) -> list[Path]:
    """The burst's intervals a GPU image without scipy left empty, computed here from the
    per-document statistics each result keeps (`benchmarks.headline.scoring.fill_intervals`)."""
    from benchmarks.headline.scoring import NO_SCIPY, fill_intervals

    filled = []
    for path in sorted(call_dir.glob("headline-*/*.json")):
        text = path.read_text()
        if NO_SCIPY in text:
            path.write_text(json.dumps(fill_intervals(json.loads(text)), indent=1) + "\n")
            filled.append(path)
    return filled


def train_share(root: Path) -> tuple[float, int, str] | None:
    """Mean share of peak bf16 FLOP/s the 7B-shape Nugget2D training steps reached (roofline /
    measured step time: the LoRA steps that carry most of profile=paper's training FLOPs)."""
    for path in sorted(root.glob("call*/train-7b/nugget2d_train_overhead_cuda*.json")):
        results = json.loads(path.read_text()).get("results", {})
        shares = [1 / r["over_roofline"] for name, r in results.items()
                  if name.startswith("nugget2d") and isinstance(r, dict) and r.get("over_roofline")]
        if shares:
            return sum(shares) / len(shares), len(shares), f"{path.parent.parent.name}/train-7b/{path.name}"
    return None


def decode_share(root: Path) -> tuple[float, int, str] | None:
    """Mean share of the memory-bandwidth roofline the decode benchmark's Nugget2D and Full
    steps reached (roofline / measured time), with how many rows, and the file."""
    for path in sorted(root.glob("call*/decode/nugget2d_decode_cuda.json")):
        rows = json.loads(path.read_text()).get("rows", [])
        shares = [1 / r[f"{s}_over_roofline"] for r in rows for s in ("nugget2d", "full_static")
                  if r.get(f"{s}_over_roofline")]
        if shares:
            return sum(shares) / len(shares), len(shares), f"{path.parent.parent.name}/decode/{path.name}"
    return None


def write_efficiency(root: Path) -> Path | None:
    """``efficiency.json`` for the cost plan, from what this window measured (nothing when it
    measured neither a training throughput nor a decode)."""
    env = env_of(root)
    device = env.get("device_name")
    if not device:  # the cost plan matches shares by device: without its name they say nothing
        return None
    data: dict = {"date": root.name, "commit": env.get("commit"), "device": device,
                  "train_flops_share": None, "decode_bandwidth_share": None, "n": {}, "source": {}}
    for key, found, how in (("train_flops_share", train_share(root), "roofline / measured step time"),
                            ("decode_bandwidth_share", decode_share(root), "roofline / measured ms per token")):
        if found:
            data[key], data["n"][key], source = found
            data["source"][key] = f"{source}: {how}"
    if data["train_flops_share"] is None and data["decode_bandwidth_share"] is None:
        return None
    path = root / "efficiency.json"
    path.write_text(json.dumps(data, indent=2) + "\n")
    return path
