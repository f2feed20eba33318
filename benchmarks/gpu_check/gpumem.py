"""GPU memory in use, sampled by a thread beside a run, and its peak within a time window.

Read with NVML (``pynvml``, from nvidia-ml-py, in the GPU image) or, without it,
``nvidia-smi``. The number is the device's used memory, all processes together (CUDA
contexts and the caching allocators of every process, Ray workers included): a stage's
peak is the device's peak while that stage ran, shared with any stage beside it.
"""

from __future__ import annotations

import shutil
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path

Reader = Callable[[], int | None]  # bytes in use on GPU 0; None when unreadable
GIB = 2**30


def nvml_reader() -> Reader | None:
    try:
        import pynvml

        pynvml.nvmlInit()
        handle = pynvml.nvmlDeviceGetHandleByIndex(0)
    except Exception:  # no library, no driver, no device: try nvidia-smi
        return None
    return lambda: int(pynvml.nvmlDeviceGetMemoryInfo(handle).used)


def smi_reader() -> Reader | None:
    if shutil.which("nvidia-smi") is None:
        return None

    def read() -> int | None:
        out = subprocess.run(["nvidia-smi", "--query-gpu=memory.used", "--format=csv,noheader,nounits", "-i", "0"],
                             capture_output=True, text=True, timeout=10)
        try:
            return int(float(out.stdout.split()[0]) * 2**20)  # MiB
        except (IndexError, ValueError):
            return None

    return read


def default_reader() -> Reader | None:
    return nvml_reader() or smi_reader()


class Sampler:
    """Samples ``read`` every ``interval`` s into memory and, line by line, into ``csv``."""

    def __init__(self, read: Reader, csv: Path, interval: float = 0.5) -> None:
        self.read, self.csv, self.interval = read, csv, interval
        self.samples: list[tuple[float, int]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="gpu-memory", daemon=True)

    def start(self) -> Sampler:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def _run(self) -> None:
        with self.csv.open("w") as out:
            out.write("unix_time,used_bytes\n")
            while not self._stop.is_set():
                try:
                    used = self.read()
                except Exception:  # a driver hiccup must not end the sampling
                    used = None
                if used is not None:
                    now = time.time()
                    self.samples.append((now, used))
                    out.write(f"{now:.2f},{used}\n")
                    out.flush()
                self._stop.wait(self.interval)


def window_peak(samples: list[tuple[float, int]], start: float, end: float) -> int | None:
    """The largest sample taken from ``start`` to ``end``; None without one."""
    inside = [used for t, used in samples if start <= t <= end]
    return max(inside) if inside else None
