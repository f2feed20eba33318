"""The driver's side of crashes: what a killed driver left, and a driver stopping mid-run.

- :func:`clean_up_after_crashes` (at start): MLflow runs of dead drivers marked FAILED
  (`stages.framework.orphans`), scratch of crashed attempts swept (`ArtifactStore.sweep`).
- :func:`sigterm_as_exit`: SIGTERM raises SystemExit, so the driver's runs get ended;
  :func:`stop_signal` says afterwards that a signal, not an error, stopped the driver
  (Ray replaces a SystemExit raised inside its blocking calls by ``SystemExit(1)``, the
  exit code of a failed stage, so the exception alone cannot tell).
- :func:`abandon`: the driver stops (interrupt, SIGTERM, an error): running stage tasks are
  cancelled and every open run is ended KILLED or FAILED.
"""

from __future__ import annotations

import logging
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from stages.framework.dag import PlannedStage
from stages.framework.orphans import mark_orphaned_runs
from stages.framework.store import ArtifactStore
from stages.framework.tracking import RunLogger, Tracker

log = logging.getLogger("nugget.pipeline")
_received: list[int] = []  # the signals that stopped this driver, in order
# the signals received inside the current `sigterm_as_exit` (for `raise_if_stopped`)
_pending: list[int] = []


def clean_up_after_crashes(tracker: Tracker, store: ArtifactStore, plan: list[PlannedStage]) -> None:
    """What a killed driver left: its runs (marked FAILED) and the scratch of its stages."""
    orphans = mark_orphaned_runs(tracker.client, tracker.experiment_id)
    if orphans:
        log.info("marked %d MLflow run(s) of dead drivers FAILED (%s)", len(orphans),
                 next(iter(orphans.values())))
    removed = [path for p in plan for path in store.sweep(p.name)]
    if removed:
        log.info("removed %d scratch folder(s) left by crashed runs", len(removed))


@contextmanager
def sigterm_as_exit() -> Iterator[None]:
    """SIGTERM (``ray job stop``, a scheduler's preemption) raises SystemExit in the driver,
    so its runs are ended instead of left RUNNING (the main thread only: signals need it)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum: int, frame: Any) -> None:
        _received.append(signum)
        _pending.append(signum)
        raise SystemExit(128 + signum)

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
        _pending.clear()


def raise_if_stopped() -> None:
    """Raise again the SystemExit of a SIGTERM `sigterm_as_exit` caught, for a loop to call
    between waits. The handler's own raise can be lost: Python runs a signal handler at the
    next bytecode of the main thread, which may be inside a weakref callback or ``__del__``
    (a garbage collection of SQLAlchemy's, say), where an exception is printed as
    "Exception ignored in ..." and dropped, and the driver would run on."""
    if _pending:
        raise SystemExit(128 + _pending[-1])


def stop_signal(exc: BaseException) -> int | None:
    """The signal that stopped the driver when ``exc`` is how it stopped: SIGTERM caught
    by `sigterm_as_exit`, SIGINT for Ctrl-C (KeyboardInterrupt); None for anything else."""
    if isinstance(exc, KeyboardInterrupt):
        return signal.SIGINT
    if isinstance(exc, SystemExit) and _received:
        return _received[-1]
    return None


def abandon(exc: BaseException, parent: RunLogger, children: dict[str, RunLogger],
             running: dict[Any, PlannedStage], ended: set[str]) -> None:
    """The driver stops mid-run: cancel running stage tasks (they discard their scratch),
    end the runs not ``ended`` yet and the parent KILLED (interrupt, SIGTERM) or FAILED
    (an error)."""
    import ray

    status = "KILLED" if isinstance(exc, KeyboardInterrupt | SystemExit) else "FAILED"
    why = f"driver stopped: {type(exc).__name__}: {exc}"[:500]
    for ref in running:
        try:
            ray.cancel(ref)
        except Exception:  # already finished, or Ray itself is going down
            pass
    for run in [*(run for name, run in children.items() if name not in ended), parent]:
        try:
            run.set_tags({"error": why})
            run.end(status)
        except Exception as err:  # the tracking store may be what failed: the next driver
            log.warning("could not end MLflow run %s (%s); the next run marks it FAILED", run.run_id, err)
