"""Where the burst runs and in which precision, recorded in every result.

Training autocasts to bf16 on CUDA (fp32 master weights, as profile gpu1 trains); on a CPU it
runs fp32 unless ``--precision bf16`` asks otherwise. bf16 autocast was not faster at the CPU
sizes on this machine's AMX units (2026-11-28, 2 threads: the cpu-size Nugget BART 298 vs 297
ms per step, dominated by the 49k-vocabulary head; 30-layer SmolLM2 at 4 x 24 tokens: Nugget2D
0.78 fp32 vs 0.67 bf16 s per step, ICAE 1.03 vs 1.25), so the simpler fp32 is the CPU default.
Scoring runs the trained model with bf16 weights on CUDA (profile gpu1's ``eval.dtype``), fp32
on a CPU. Devices and moves go through `stages.common.device`.
"""

from __future__ import annotations

import importlib.metadata
import platform
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from stages.common.device import resolve_device

BF16_CPU_FLAGS = ("amx_bf16", "avx512_bf16")


def cpu_flags() -> set[str]:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return set()
    line = next((x for x in text.splitlines() if x.startswith("flags")), "")
    return set(line.partition(":")[2].split())


def cpu_model() -> str:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return platform.processor() or "cpu"
    line = next((x for x in text.splitlines() if x.startswith("model name")), "")
    return line.partition(":")[2].strip() or platform.processor() or "cpu"


@dataclass(frozen=True)
class RunDevice:
    """The device of a run and its precisions (names of `stages.common.device.PRECISIONS`)."""

    device: torch.device
    train_precision: str  # autocast of training forwards (weights stay fp32)
    eval_precision: str  # the scored model's weights

    @property
    def name(self) -> str:
        if self.device.type == "cuda":
            return torch.cuda.get_device_name(self.device)
        return f"{cpu_model()} ({torch.get_num_threads()} threads)"

    def describe(self) -> dict[str, Any]:
        return {"device": self.device.type, "device_name": self.name,
                "dtype": f"train: {self.train_precision} autocast, fp32 master weights; "
                         f"scoring: {self.eval_precision} weights"}


def run_device(setting: str, precision: str = "auto") -> RunDevice:
    """``setting``: auto | cpu | cuda; ``precision``: auto (module docstring) | fp32 | bf16."""
    device = resolve_device(setting, "--device")
    if device.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = True  # fp32 leftovers (the loss's upcast logits)
        torch.backends.cudnn.allow_tf32 = True
        train = "bf16" if precision == "auto" else precision
        return RunDevice(device, train, "bf16" if train == "bf16" else "fp32")
    if precision == "bf16" and not cpu_flags() & set(BF16_CPU_FLAGS):
        print("[headline] --precision bf16 on a CPU without bf16 units: emulated, expect it to be slow")
    return RunDevice(device, "fp32" if precision == "auto" else precision, "fp32")


def release(run: RunDevice) -> None:
    """Give a finished (or failed) model's memory back before the next one is built."""
    import gc

    gc.collect()
    if run.device.type == "cuda":
        torch.cuda.empty_cache()


def versions() -> dict[str, str | None]:
    """Versions of what produced a number (None: not installed here)."""
    out: dict[str, str | None] = {"python": sys.version.split()[0], "torch": torch.__version__,
                                  "cuda": torch.version.cuda}
    for dist in ("transformers", "peft", "sacrebleu", "numpy", "scipy", "gguf"):
        try:
            out[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            out[dist] = None
    return out
