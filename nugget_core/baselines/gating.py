"""The RE gating layer lives with the RE model library (`nugget_core.restorable.gating`);
the gating baseline imports it from there."""

from ..restorable.gating import GatingLayer

__all__ = ["GatingLayer"]
