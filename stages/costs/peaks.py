"""What a roofline divides by: a device's memory bandwidth and peak dense bf16 FLOP/s.

Decode is memory-bound: a generated token costs the bytes one step must read over the
memory bandwidth. A training step (and a forward-only pass over many tokens) is
compute-bound: its FLOPs over the peak FLOP/s. The peaks come from `DEVICE_PEAKS` by the
CUDA device's name (or a short name of `DEVICE_NAMES`), or from explicit overrides; with
neither the roofline is unknown (``None``), never guessed.
"""

from __future__ import annotations

from dataclasses import dataclass

#: Substring of ``torch.cuda.get_device_name()`` -> (memory bandwidth GB/s, dense bf16
#: TFLOP/s without sparsity), from the vendor datasheets: NVIDIA H100 Tensor Core GPU
#: datasheet (H100 SXM: 3.35 TB/s HBM3, 989 bf16 TFLOPS dense, 1,979 with sparsity);
#: NVIDIA H200 Tensor Core GPU datasheet (H200 SXM: 4.8 TB/s HBM3e, 989 bf16 TFLOPS dense);
#: NVIDIA A100 Tensor Core GPU datasheet (A100 80GB SXM: 2,039 GB/s, 80GB PCIe: 1,935
#: GB/s; 312 bf16 TFLOPS dense). First match wins, so the more specific names come first.
DEVICE_PEAKS: dict[str, tuple[float, float]] = {
    "H100 80GB HBM3": (3350.0, 989.0),
    "H200": (4800.0, 989.0),
    "A100-SXM4-80GB": (2039.0, 312.0),
    "A100 80GB PCIe": (1935.0, 312.0),
}

#: Short names a person types (``--cost-device h100``) -> their `DEVICE_PEAKS` entry.
DEVICE_NAMES: dict[str, str] = {
    "h100": "H100 80GB HBM3",
    "h200": "H200",
    "a100": "A100-SXM4-80GB",
    "a100-pcie": "A100 80GB PCIe",
}


@dataclass(frozen=True)
class Peaks:
    """What the roofline divides by; ``None`` = unknown (no table entry, no override)."""

    bandwidth_gbs: float | None
    peak_tflops: float | None
    source: str  # where the numbers come from, for the results file

    def seconds_for_bytes(self, nbytes: float) -> float | None:
        return None if self.bandwidth_gbs is None else nbytes / (self.bandwidth_gbs * 1e9)

    def seconds_for_flops(self, flops: float) -> float | None:
        return None if self.peak_tflops is None else flops / (self.peak_tflops * 1e12)


def device_peaks(device_name: str, bandwidth_gbs: float | None = None,
                 peak_tflops: float | None = None) -> Peaks:
    """The peaks of ``device_name`` from `DEVICE_PEAKS`, each overridden when given."""
    table: tuple[float | None, float | None]
    for key, (bw, tflops) in DEVICE_PEAKS.items():
        if key in device_name:
            table, source = (bw, tflops), f"datasheet entry {key!r}"
            break
    else:
        table, source = (None, None), f"no datasheet entry for {device_name!r}"
    for value, flag in ((bandwidth_gbs, "--bandwidth-gbs"), (peak_tflops, "--peak-tflops")):
        if value is not None and value <= 0:
            raise ValueError(f"{flag}={value}: must be > 0")
    if bandwidth_gbs is not None or peak_tflops is not None:
        source += "; overridden: " + ", ".join(
            f"{k}={v}" for k, v in (("bandwidth_gbs", bandwidth_gbs), ("peak_tflops", peak_tflops))
            if v is not None)
    return Peaks(bandwidth_gbs if bandwidth_gbs is not None else table[0],
                 peak_tflops if peak_tflops is not None else table[1], source)


def known_devices() -> list[str]:
    """Every name `table_entry` accepts: the short names, then the table's entries."""
    return [*DEVICE_NAMES, *DEVICE_PEAKS]


def table_entry(name: str) -> str:
    """The `DEVICE_PEAKS` entry ``name`` means: a short name of `DEVICE_NAMES` or an entry
    (case-insensitive), or a CUDA device name holding an entry (``NVIDIA H100 80GB HBM3``).
    A ``ValueError`` listing the known names otherwise."""
    wanted = name.strip().lower()
    if wanted in DEVICE_NAMES:
        return DEVICE_NAMES[wanted]
    for key in DEVICE_PEAKS:
        if key.lower() == wanted or key.lower() in wanted:
            return key
    raise ValueError(f"unknown device {name!r}; known: {', '.join(known_devices())}")


def ratio(measured: float, roofline: float | None) -> float | None:
    """``measured / roofline``, ``None`` when the roofline is unknown."""
    return None if roofline is None else measured / roofline


def fmt_ratio(value: float | None, suffix: str = "x") -> str:
    """A ratio for a results table: ``2.31x`` or ``unknown``."""
    return "unknown" if value is None else f"{value:.2f}{suffix}"
