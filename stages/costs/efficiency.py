"""The share of a device's peak a stage's work reaches: MEASURED by the newest GPU check
that measured it on that device, else a stated ASSUMED default.

A GPU check (`make gpu-check`, docs/performance.md) writes
``benchmarks/results/gpu/<UTC date>/efficiency.json``::

    {"date": "YYYY-MM-DD", "commit": "<sha>", "device": "NVIDIA H100 80GB HBM3",
     "train_flops_share": 0.31 | null, "decode_bandwidth_share": 0.55 | null,
     "n": {"train_flops_share": <runs / steps it came from>, ...},
     "source": {"train_flops_share": "<what was timed>", ...}}

``train_flops_share``: measured FLOP/s over the peak dense FLOP/s, for compute-bound work
(training steps, forward passes over many tokens); ``decode_bandwidth_share``: bytes read
per second over the memory bandwidth, for decoding. For each figure the newest file (by its
folder's date) of the same device (`stages.costs.peaks.table_entry`) holding a number in
(0, 1] wins; a ``null`` leaves the figure to an older file or to the default. The folder is
read as files (no import of the benchmarks): ``--gpu-results DIR`` or ``$NUGGET_GPU_RESULTS``
name another one.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from stages.costs.peaks import table_entry

RESULTS_ENV = "NUGGET_GPU_RESULTS"
REPO = Path(__file__).resolve().parents[2]
DEFAULT_RESULTS = REPO / "benchmarks" / "results" / "gpu"
FILE = "efficiency.json"
TRAIN, DECODE = "train_flops_share", "decode_bandwidth_share"

#: The defaults where no GPU check measured a figure, with why these values. Both rest on
#: the single-H100 benchmarks of commit 785e545 (benchmarks/results/nugget2d_*_cuda.json,
#: LLaMA-2-7B shape, bf16), divided here by their rooflines (`stages.costs.decoder`).
ASSUMED: dict[str, tuple[float, str]] = {
    TRAIN: (0.20, "LoRA steps of the LLaMA-2-7B shape on one H100 reached 0.19 (Nugget2D) and 0.28 (Full FT) "
                  "of peak bf16 FLOP/s (benchmarks/results/nugget2d_train_overhead_cuda.json, 785e545); "
                  "Nugget2D steps carry most of the training FLOPs, so the lower one, rounded"),
    DECODE: (0.40, "Nugget2D's static-cache decoder (the evaluation stages' generate_from_context) read "
                   "0.43 of H100 bandwidth at batch 1, Full on a static cache 0.56-0.63, HF generate 0.14 "
                   "(benchmarks/results/nugget2d_decode_cuda.json, 785e545); the Nugget2D figure, rounded "
                   "down: the encoder-decoders' beam search runs HF generate and is slower"),
}
#: Data-parallel scaling efficiency of a training stage over more devices (``--gpus``).
SCALING: tuple[float, str] = (0.90, "assumed, not measured (no multi-GPU run here): each step's gradient "
                                    "all-reduce is of the trained weights only (LoRA adapters; at most "
                                    "mBART-50's 0.6B) and overlaps the backward pass")


class EfficiencyError(ValueError):
    """An efficiency file that exists but cannot be read (names the file)."""


@dataclass(frozen=True)
class Share:
    """One figure's value and its provenance."""

    figure: str
    value: float
    measured: bool
    basis: str  # the file, date, commit, n and source; or why the default

    @property
    def label(self) -> str:
        return "MEASURED" if self.measured else "ASSUMED"

    def line(self) -> str:
        return f"{self.figure} = {self.value:.2f} {self.label}: {self.basis}"


def results_dir(override: str | None = None) -> Path:
    """The GPU checks' folder: ``override``, else ``$NUGGET_GPU_RESULTS``, else the repo's."""
    chosen = override or os.environ.get(RESULTS_ENV, "")
    return Path(chosen).expanduser() if chosen else DEFAULT_RESULTS


def shown(path: Path) -> str:
    """``path`` relative to the repository when inside it (the plan reads the same on every clone)."""
    try:
        return str(path.resolve().relative_to(REPO))
    except ValueError:
        return str(path)


def _read(path: Path) -> dict[str, Any]:
    try:
        content = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise EfficiencyError(f"{path}: cannot read the GPU check's efficiency ({exc})") from exc
    if not isinstance(content, dict):
        raise EfficiencyError(f"{path}: expected a JSON object")
    return content


def _same_device(content: dict[str, Any], entry: str) -> bool:
    try:
        return table_entry(str(content.get("device", ""))) == entry
    except ValueError:
        return False


def _measured(figure: str, content: dict[str, Any], path: Path) -> Share | None:
    value = content.get(figure)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= 1:
        raise EfficiencyError(f"{path}: {figure}={value!r} must be a share in (0, 1] or null")
    n = (content.get("n") or {}).get(figure, "?")
    source = (content.get("source") or {}).get(figure, "source not stated")
    return Share(figure, float(value), True, f"{shown(path)}, {content.get('date', path.parent.name)}, commit "
                 f"{str(content.get('commit', '?'))[:12]}, n={n}, {source}")


def shares(device_entry: str, folder: Path | None = None) -> dict[str, Share]:
    """Each figure for ``device_entry`` (a `stages.costs.peaks.DEVICE_PEAKS` key): the
    newest measurement on that device, else the default (saying what newer file of another
    device was passed over)."""
    folder = results_dir() if folder is None else folder
    files = sorted(folder.glob(f"*/{FILE}"), key=lambda p: p.parent.name, reverse=True) if folder.is_dir() else []
    found = [(p, _read(p)) for p in files]
    out: dict[str, Share] = {}
    for figure, (value, why) in ASSUMED.items():
        measured = next((s for p, c in found if _same_device(c, device_entry)
                         and (s := _measured(figure, c, p)) is not None), None)
        if measured is not None:
            out[figure] = measured
            continue
        other = next((f"; the newest measurement, {shown(p)}, is of {c.get('device')!r}" for p, c in found
                      if c.get(figure) is not None and not _same_device(c, device_entry)), "")
        searched = f"no {FILE} under {shown(folder)} measured it on {device_entry}"
        out[figure] = Share(figure, value, False, f"{searched}{other}; default: {why}")
    return out
