"""A device's memory bandwidth, measured where the work runs: a STREAM-like copy.

Why measure instead of reading a spec sheet: a decode step of a small LM is memory-bound, so
its lower bound is the bytes it reads over the bandwidth the device actually delivers to this
process (on a shared CPU: to the threads torch uses here), not the DIMMs' or HBM's nominal
figure. STREAM's "copy" kernel (McCalpin) reads one buffer and writes another, both larger
than the caches; it counts both directions, so bytes moved = 2 x the buffer. The best of
``repeats`` copies is reported, as STREAM does (the others lost time to something else).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import torch

from stages.common.device import synchronize


@dataclass(frozen=True)
class Bandwidth:
    """``gbs``: the best copy's bytes moved (read + written) per second, in 1e9 bytes; with
    every copy's figure (``samples``) and the buffer size."""

    gbs: float
    samples: tuple[float, ...]
    buffer_bytes: int
    device: str

    def seconds_for(self, nbytes: float) -> float:
        """The least time reading ``nbytes`` can take at this bandwidth."""
        return nbytes / (self.gbs * 1e9)

    def describe(self) -> str:
        return (f"{self.gbs:.1f} GB/s on {self.device} (STREAM-like copy of {self.buffer_bytes / 2**20:.0f} MiB, "
                f"read + written, best of {len(self.samples)}; median {sorted(self.samples)[len(self.samples) // 2]:.1f})")


def copy_bandwidth(device: torch.device | str, megabytes: int = 256, repeats: int = 5) -> Bandwidth:
    """Copy a ``megabytes`` MiB buffer into another ``repeats`` times (after one untimed copy
    that faults the pages in) on ``device``; the best rate and every rate."""
    if megabytes < 1 or repeats < 1:
        raise ValueError(f"copy_bandwidth: megabytes ({megabytes}) and repeats ({repeats}) must be >= 1")
    device = torch.device(device)
    n = megabytes * 2**20 // 4
    src = torch.ones(n, dtype=torch.float32, device=device)
    dst = torch.empty_like(src)
    dst.copy_(src)
    rates = []
    for _ in range(repeats):
        synchronize(device)
        start = time.perf_counter()
        dst.copy_(src)
        synchronize(device)
        rates.append(2 * src.nbytes / (time.perf_counter() - start) / 1e9)
    del src, dst
    return Bandwidth(max(rates), tuple(rates), n * 4, str(device))
