"""The ``TorchTrainer`` every fit uses: Ray Train's own, less its placement-group cleaner
on the pipeline's private local Ray.

Ray Train 2.60 starts a detached ``PlacementGroupCleaner`` actor per fit. Its monitor
thread asks Ray's state API every second whether the train controller is alive. The
state API is served by the dashboard, which the private Ray of `pipelines.cli` does not
run (``include_dashboard=False``), and the client finds its cluster by auto-detection,
which picks ``/tmp/ray/ray_current_cluster`` (the last ``ray start`` head, often stopped
long ago) or another Ray of the machine. Each query then waits for a GCS that is not
there, longer than the cleaner's stop timeout, and a fit ends with "Failed to stop
PlacementGroupCleaner gracefully" or "Timed out while waiting for GCS" tracebacks
(docs/environment-notes.md has the timings). On that Ray the cleaner can never see the
controller die, so it protects nothing: it is left out there
(`stages.framework.private_ray`). A cluster with a dashboard (``make run``'s head,
``ray_cluster.yaml``) keeps it.
"""

from __future__ import annotations

from typing import Any

from stages.framework import private_ray

CLEANER_CALLBACK = "PlacementGroupCleanerCallback"


def without_cleaner(callbacks: list[Any], private: bool) -> list[Any]:
    """Ray Train's default callbacks, the placement-group cleaner dropped on the private Ray."""
    return [c for c in callbacks if type(c).__name__ != CLEANER_CALLBACK] if private else callbacks


def torch_trainer(*args: Any, **kwargs: Any) -> Any:
    """A ``ray.train.torch.TorchTrainer(*args, **kwargs)`` (see the module docstring)."""
    from ray.train.torch import TorchTrainer

    class Trainer(TorchTrainer):
        # The ignore: ray.train.torch binds Train V2's TorchTrainer (which defines this hook)
        # only at run time, when V2 is enabled (the default, which the pipeline needs); a
        # type checker sees V1's, which has no such method.
        def _create_default_callbacks(self) -> list[Any]:
            default = super()._create_default_callbacks()  # type: ignore[misc]
            return without_cleaner(default, private_ray.is_private())

    return Trainer(*args, **kwargs)
