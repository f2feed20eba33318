"""The switch of the device guard (`stages.common.device_guard`), torch-free so that a
pipeline driver can pass it on without importing torch."""

from __future__ import annotations

import os

ENV = "NUGGET_DEVICE_GUARD"


def enabled() -> bool:
    """Whether ``NUGGET_DEVICE_GUARD`` asks for the guard (``1`` / ``true`` / ``yes``)."""
    return os.environ.get(ENV, "").strip().lower() in ("1", "true", "yes")


def runtime_env_vars() -> dict[str, str]:
    """For a stage task's runtime env: the switch, where this process has it on (workers of
    a head started elsewhere do not inherit the driver's environment)."""
    return {ENV: "1"} if enabled() else {}
