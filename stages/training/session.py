"""What the training loop reports to: Ray Train's session, or the in-process session of a
one-worker CPU fit.

The loop (`stages.training.loop`, `stages.training.sequence`) asks `current()` for its rank and
world size, the checkpoint to resume from, and where to report metrics and checkpoints:

- in a worker of a ``TorchTrainer`` worker group (several workers, a GPU, DeepSpeed, or
  ``NUGGET_TRAIN_IN_PROCESS=0``), Ray Train's own session: ``ray.train.get_context()``,
  ``ray.train.get_checkpoint()``, ``ray.train.report()`` (Ray Train persists each reported
  checkpoint in the run's storage and restarts the group from the latest on a failure);
- in an `InProcessSession` (`run_in_process`): a job of one CPU worker with ``backend=ddp``
  (`in_process`) trains in the process that asks for the fit (the stage's Ray task, a Tune
  trial). A worker group would add a controller and a worker process, each importing torch,
  and a process group, before the first step: the fixed cost of a fit
  (benchmarks/fit_overhead.py), paid by every one-worker fit of the CPU profiles for nothing
  a single process needs. The session keeps Ray Train's guarantees for such a fit:

  * each reported checkpoint is copied into the run's storage (``<storage>/<name>/``, local
    or a URI every node reaches) as ``checkpoint_<n>/``, marked complete last
    (`COMPLETE_MARK`), the ``keep`` newest kept (``CheckpointConfig(num_to_keep=2)``);
  * a fit resumes from the newest complete checkpoint in that folder, so a new attempt of
    the stage continues an interrupted one, as Ray Train's restore does;
  * a failure of the loop is retried ``job.max_failures`` times, each retry resuming from
    the newest checkpoint (``FailureConfig(max_failures)``); an interrupt or exit is not.

Rank 0 of 1 is every process's answer in process, so the loop needs no other branch.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from stages.common import in_process_switch
from stages.training.storage import clear_storage, copy_tree, exists, list_names, write_text

if TYPE_CHECKING:
    from stages.config.job import TrainJob

log = logging.getLogger("nugget.train")

COMPLETE_MARK = "_nugget_checkpoint_complete"
KEEP = 2  # checkpoints kept in storage, as launch's CheckpointConfig(num_to_keep=2)
_CHECKPOINT = re.compile(r"^checkpoint_(\d+)$")


class Session(Protocol):
    """What the loop calls (module docstring)."""

    def rank(self) -> int: ...
    def world_size(self) -> int: ...
    def checkpoint(self) -> Any: ...  # a ray.train.Checkpoint, or None
    def report(self, metrics: dict[str, Any], checkpoint_dir: Path | None = None) -> None: ...


class RaySession:
    """Ray Train's session of a ``TorchTrainer`` worker."""

    def rank(self) -> int:
        import ray.train

        return int(ray.train.get_context().get_world_rank())

    def world_size(self) -> int:
        import ray.train

        return int(ray.train.get_context().get_world_size())

    def checkpoint(self) -> Any:
        import ray.train

        return ray.train.get_checkpoint()

    def report(self, metrics: dict[str, Any], checkpoint_dir: Path | None = None) -> None:
        import ray.train

        checkpoint = None if checkpoint_dir is None else ray.train.Checkpoint.from_directory(str(checkpoint_dir))
        ray.train.report(metrics, checkpoint=checkpoint)


class InProcessSession:
    """The session of a one-worker fit in the calling process, its checkpoints in
    ``run_uri`` (module docstring)."""

    def __init__(self, run_uri: str, keep: int = KEEP) -> None:
        self.run_uri, self.keep = run_uri, keep
        self.metrics: dict[str, Any] = {}

    def rank(self) -> int:
        return 0

    def world_size(self) -> int:
        return 1

    def _complete(self) -> list[int]:
        """Indices of the complete checkpoints in storage, oldest first."""
        found = [int(m.group(1)) for name in list_names(self.run_uri) if (m := _CHECKPOINT.match(name))]
        return sorted(i for i in found if exists(f"{self._uri(i)}/{COMPLETE_MARK}"))

    def _uri(self, index: int) -> str:
        return f"{self.run_uri}/checkpoint_{index:06d}"

    def checkpoint(self) -> Any:
        """The newest complete checkpoint in storage (a ``ray.train.Checkpoint``), or None."""
        import ray.train

        done = self._complete()
        return ray.train.Checkpoint(self._uri(done[-1])) if done else None

    def report(self, metrics: dict[str, Any], checkpoint_dir: Path | None = None) -> None:
        self.metrics = dict(metrics)
        if checkpoint_dir is None:
            return
        indices = [int(m.group(1)) for name in list_names(self.run_uri) if (m := _CHECKPOINT.match(name))]
        uri = self._uri(max(indices, default=-1) + 1)
        copy_tree(str(checkpoint_dir), uri)
        write_text(f"{uri}/{COMPLETE_MARK}", "complete\n")  # last: a checkpoint without it is never read
        for old in self._complete()[: -self.keep]:
            clear_storage(self.run_uri, Path(self._uri(old)).name)


_active: InProcessSession | None = None


def current() -> Session:
    """The in-process session of the fit running in this process, else Ray Train's."""
    return _active if _active is not None else RaySession()


@contextmanager
def _activated(session: InProcessSession) -> Iterator[None]:
    global _active
    if _active is not None:
        raise RuntimeError("an in-process fit is already running in this process")
    _active = session
    try:
        yield
    finally:
        _active = None


def in_process(job: TrainJob) -> bool:
    """Whether ``job`` trains in the calling process: one CPU worker on ``ddp``, and the switch
    (``NUGGET_TRAIN_IN_PROCESS``) not turned off."""
    return (job.num_workers == 1 and not job.use_gpu and job.backend == "ddp"
            and in_process_switch.enabled())


@dataclass(frozen=True)
class InProcessResult:
    """What `stages.training.launch` reads of a fit's result (as of a ``ray.train.Result``)."""

    checkpoint: Any  # the last reported checkpoint (a ray.train.Checkpoint), or None
    metrics: dict[str, Any]


def run_in_process(train_fn: Callable[[dict[str, Any]], None], loop_config: dict[str, Any], job: TrainJob,
                   run_uri: str) -> InProcessResult:
    """Run ``train_fn(loop_config)`` here under an `InProcessSession` whose checkpoints live in
    ``run_uri``, retrying a failure ``job.max_failures`` times from the newest checkpoint."""
    for attempt in range(job.max_failures + 1):
        session = InProcessSession(run_uri)
        try:
            with _activated(session):
                train_fn(loop_config)
        except Exception as exc:  # an interrupt or an exit (BaseException) is never retried
            if attempt == job.max_failures:
                raise
            log.warning("training in process failed (%s: %s); attempt %d of %d resumes from the newest checkpoint",
                        type(exc).__name__, str(exc)[:200], attempt + 2, job.max_failures + 1)
            continue
        return InProcessResult(session.checkpoint(), session.metrics)
    raise AssertionError("unreachable: the last attempt returns or raises")
