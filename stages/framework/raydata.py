"""Ray Data settings shared by the stages that use it.

One overall progress bar per dataset (rows/s) instead of one per operator: with stage
logs streamed from several workers, per-operator bars drown the log in redraws.
"""

from __future__ import annotations


def configure() -> None:
    """Call at the start of a stage's ``run`` before building datasets."""
    import ray.data

    ctx = ray.data.DataContext.get_current()
    ctx.enable_operator_progress_bars = False
    ctx.enable_progress_bars = True
