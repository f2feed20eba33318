"""Plant a device-less ``torch.zeros(n)`` in project code, to show the device guard catches it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

PLANTED_LINE = 2  # the line of ``torch.zeros`` in the planted source below


def planted(original: Callable[..., Any], as_file: Path) -> Callable[..., Any]:
    """``original`` with ``torch.zeros(4)`` run first, compiled as code of ``as_file``: to
    the guard, a tensor made without a device by that project file (line `PLANTED_LINE`)."""
    source = "def planted(*args, **kwargs):\n    torch.zeros(4)\n    return original(*args, **kwargs)\n"
    namespace: dict[str, Any] = {"torch": torch, "original": original}
    exec(compile(source, str(as_file), "exec"), namespace)  # noqa: S102  (test-only code, fixed text)
    return namespace["planted"]
