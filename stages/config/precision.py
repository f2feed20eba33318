"""``auto`` precision: bf16 where the hardware multiplies bf16 natively, fp32 elsewhere.

The precision fields (``train.<job>.precision``, ``eval.dtype``) take ``fp32``, ``bf16`` or
``auto``. `resolve_precisions` replaces every ``auto`` of a loaded config by the value it
stands for on this machine, before any cache key is computed, so a key always names the
precision its stage computed in (an ``auto`` run on a machine without bf16 units and one on a
machine with them never share an output), and the logged config says which was used:

- a training job with ``use_gpu``, or an evaluation with ``run.device`` ``cuda`` (or
  ``cuda:N``): ``bf16`` (the GPUs this pipeline targets, A100 / H100 / H200, multiply bf16
  natively);
- anything on the CPU: ``bf16`` when this CPU has bf16 matrix instructions (x86: AMX-BF16 or
  AVX512-BF16; Arm: the BF16 extension), read from ``/proc/cpuinfo``; else ``fp32``.
  A CPU without them emulates bf16 matrix products, far slower than fp32 (the numbers:
  docs/environment-notes.md), so ``auto`` keeps fp32 there.

``run.device=auto`` is decided by the CPU of the machine that loads the config: on a cluster
whose evaluations run on GPUs, set ``eval.dtype`` explicitly. The machine's answer is logged
once per process (`cpu_bf16`), in words, with the flags it rests on.
"""

from __future__ import annotations

import dataclasses
import logging
import platform
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from stages.config.schema import PipelineConfig

LOG = logging.getLogger("nugget.config")
PRECISION_CHOICES = ("auto", "fp32", "bf16")
#: /proc/cpuinfo flags of bf16 matrix instructions: x86 (Sapphire Rapids' AMX, Cooper Lake / Zen 4's
#: AVX512-BF16) and Arm (ARMv8.6's BF16: Graviton 3, Neoverse V1 / V2)
BF16_FLAGS = ("amx_bf16", "avx512_bf16", "bf16")
CPUINFO = Path("/proc/cpuinfo")


@dataclass(frozen=True)
class CpuBf16:
    """Whether this CPU multiplies bf16 natively, and the evidence in words."""

    native: bool
    why: str


def read_cpu_flags(cpuinfo: Path = CPUINFO) -> frozenset[str] | None:
    """The feature flags of the first CPU in ``cpuinfo`` (x86 ``flags``, Arm ``Features``), or
    None where the file does not exist or has no such line (not Linux)."""
    try:
        text = cpuinfo.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip() in ("flags", "Features"):
            return frozenset(value.split())
    return None


def bf16_support(flags: frozenset[str] | None) -> CpuBf16:
    """`CpuBf16` from a CPU's flags (`read_cpu_flags`)."""
    if flags is None:
        return CpuBf16(False, f"no CPU flags readable from {CPUINFO} ({platform.system()} {platform.machine()})")
    found = [f for f in BF16_FLAGS if f in flags]
    if found:
        return CpuBf16(True, f"this CPU has bf16 matrix instructions ({', '.join(found)})")
    return CpuBf16(False, f"this CPU has no bf16 matrix instructions (none of {', '.join(BF16_FLAGS)})")


@cache
def cpu_bf16() -> CpuBf16:
    """This machine's `CpuBf16`, read once per process and logged then."""
    found = bf16_support(read_cpu_flags())
    LOG.info("precision auto on the CPU: %s (%s)", "bf16" if found.native else "fp32", found.why)
    return found


def resolve(value: str, on_gpu: bool, cpu: CpuBf16 | None = None) -> str:
    """``value`` (one of `PRECISION_CHOICES`) as the precision it stands for: ``fp32`` / ``bf16``
    unchanged, ``auto`` per the module docstring (``cpu``: default `cpu_bf16`)."""
    if value != "auto":
        return value
    if on_gpu:
        return "bf16"
    return "bf16" if (cpu or cpu_bf16()).native else "fp32"


def _walk(obj: Any, path: str) -> list[tuple[Any, str, str]]:
    """``(holder, field name, dotted path)`` of every field named ``precision`` or ``dtype``
    holding ``auto``, in the dataclass tree under ``obj``."""
    found: list[tuple[Any, str, str]] = []
    if not dataclasses.is_dataclass(obj) or isinstance(obj, type):
        return found
    for f in dataclasses.fields(obj):
        value = getattr(obj, f.name)
        where = f"{path}.{f.name}" if path else f.name
        if f.name in ("precision", "dtype") and value == "auto":
            found.append((obj, f.name, where))
        elif dataclasses.is_dataclass(value):
            found += _walk(value, where)
        elif isinstance(value, dict):
            for k, v in value.items():
                found += _walk(v, f"{where}.{k}")
    return found


def resolve_precisions(cfg: PipelineConfig, cpu: CpuBf16 | None = None) -> dict[str, str]:
    """Replace every ``auto`` precision of ``cfg`` (a `PipelineConfig`) in place (module
    docstring); returns ``{dotted path: value chosen}``. A training job is on a GPU when its
    ``use_gpu`` is set; anything else follows ``run.device``."""
    device = str(cfg.run.device)
    chosen: dict[str, str] = {}
    for holder, name, where in _walk(cfg, ""):
        on_gpu = bool(getattr(holder, "use_gpu", False)) if name == "precision" else device.startswith("cuda")
        setattr(holder, name, resolve("auto", on_gpu, cpu))
        chosen[where] = getattr(holder, name)
    return chosen
