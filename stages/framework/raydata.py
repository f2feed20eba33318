"""Ray Data settings shared by the stages that use it.

No per-operator bars: with stage logs streamed from several workers, they drown the log in
redraws. The one overall bar per dataset (rows/s) follows the quiet switch
(`stages.framework.quiet`): off by default, on with ``--verbose``.
"""

from __future__ import annotations

from stages.framework import quiet


def configure() -> None:
    """Call at the start of a stage's ``run`` before building datasets."""
    import ray.data

    ctx = ray.data.DataContext.get_current()
    ctx.enable_operator_progress_bars = False
    ctx.enable_progress_bars = quiet.is_verbose()
    ctx.print_on_execution_start = quiet.is_verbose()
