"""Run a per-chunk function as Ray tasks with progress lines (items/s) and ordered results."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from typing import Any

log = logging.getLogger("nugget.datasets")


def map_chunks(
    fn: Callable[..., list[Any]],
    chunks: Sequence[Sequence[int]],
    shared: Sequence[Any],
    label: str,
) -> tuple[list[Any], float]:
    """``fn(chunk, *shared)`` for every chunk as a Ray task; (results in chunk order, items/s).

    ``shared`` objects are put in the object store once, not once per task.
    """
    import ray

    refs = [ray.put(x) for x in shared]
    remote = ray.remote(num_cpus=1)(fn)
    pending = {remote.remote(list(c), *refs): k for k, c in enumerate(chunks)}
    results: dict[int, list[Any]] = {}
    total, done, t0 = sum(len(c) for c in chunks), 0, time.time()
    while pending:
        ready, _ = ray.wait(list(pending), num_returns=1)
        k = pending.pop(ready[0])
        results[k] = ray.get(ready[0])
        done += len(chunks[k])
        rate = done / max(time.time() - t0, 1e-9)
        log.info("%s: %d/%d (%.1f/s)", label, done, total, rate)
    elapsed = max(time.time() - t0, 1e-9)
    return [r for k in range(len(chunks)) for r in results[k]], total / elapsed
