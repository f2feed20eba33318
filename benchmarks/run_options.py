"""Options every GPU benchmark takes, so one wrapper (``make gpu-check``) can drive them:
where results go, a time cap, and the peaks the roofline divides by.

- ``--results-dir DIR``: where the ``.json`` / ``.md`` files are written (default
  ``benchmarks/results``).
- ``--max-seconds S``: after ``S`` seconds of the run no new measurement starts; what was
  measured is written, the rest marked skipped with the reason, and the run exits 0
  (`Deadline`).
- ``--bandwidth-gbs`` / ``--peak-tflops``: override the device table of
  `benchmarks.roofline` (and give a CPU run a roofline at all).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from benchmarks.roofline import Peaks, device_peaks

RESULTS = Path(__file__).parent / "results"


def add_run_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--results-dir", type=Path, default=RESULTS,
                        help="where the results files are written (default: benchmarks/results)")
    parser.add_argument("--max-seconds", type=float, default=None,
                        help="start no new measurement after this many seconds; write what was "
                             "measured, mark the rest skipped, exit 0")
    parser.add_argument("--bandwidth-gbs", type=float, default=None,
                        help="memory bandwidth for the decode roofline (default: the device table)")
    parser.add_argument("--peak-tflops", type=float, default=None,
                        help="peak dense FLOP/s (TFLOP/s) for the training roofline (default: the device table)")


def peaks_of(args: argparse.Namespace, device_name: str) -> Peaks:
    """The roofline's peaks for this run's device and overrides."""
    return device_peaks(device_name, args.bandwidth_gbs, args.peak_tflops)


class Deadline:
    """The ``--max-seconds`` cap of one run, counted from its construction."""

    def __init__(self, max_seconds: float | None) -> None:
        if max_seconds is not None and max_seconds <= 0:
            raise ValueError(f"--max-seconds={max_seconds}: must be > 0")
        self.max_seconds = max_seconds
        self.start = time.monotonic()

    def remaining(self) -> float | None:
        """Seconds left (``None``: no cap)."""
        if self.max_seconds is None:
            return None
        return max(0.0, self.max_seconds - (time.monotonic() - self.start))

    def expired(self) -> bool:
        left = self.remaining()
        return left is not None and left <= 0

    @property
    def reason(self) -> str:
        return f"skipped: --max-seconds {self.max_seconds:g} reached before it started"
