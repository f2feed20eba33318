"""The ``gpu`` marker: tests that need CUDA are skipped, with the reason, where torch sees
no GPU (CI, laptops); `make gpu-test` runs exactly them on a CUDA machine. The tests under
tests/gpu/ take a ``device`` parameter: ``cuda`` carries the marker, ``cpu`` runs the same
code path in `make test` under the device guard (`stages.common.device_guard`)."""

from __future__ import annotations

from typing import Any

import pytest


def cuda_reason() -> str | None:
    """Why CUDA tests cannot run here, or None when they can."""
    import torch

    if not torch.cuda.is_available():
        build = f"CUDA {torch.version.cuda}" if torch.version.cuda else "a CPU-only build"
        return f"needs a CUDA GPU: torch {torch.__version__} ({build}) sees none; run `make gpu-test` on a GPU machine"
    return None


def skip_gpu_tests_without_cuda(items: list[Any]) -> None:
    # the marker, not the keyword: every test under tests/gpu/ has the keyword "gpu" (its
    # package's name), and their CPU parameters run everywhere
    gpu_items = [item for item in items if item.get_closest_marker("gpu") is not None]
    if not gpu_items:
        return
    reason = cuda_reason()
    if reason is None:
        return
    for item in gpu_items:
        item.add_marker(pytest.mark.skip(reason=reason))
