"""Optional upstream stages: a stage may read an artifact only when the stage that makes
it is part of the pipeline (e.g. the report reads the Nugget2D evaluations when they
are registered, and the sweep when it exists).

A stage lists ``required_upstream`` and ``optional_upstream``; the registry calls
:func:`resolve_optional_upstream` once with every registered stage, which sets
``upstream`` to the required names plus the registered optional ones. ``upstream`` stays
static for the whole run, so cache keys still cover every artifact a stage reads.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from stages.framework.stage import Stage


def resolve_optional_upstream(stages: Iterable[type[Stage]]) -> None:
    stages = list(stages)
    names = {s.name for s in stages}
    for stage in stages:
        # declared by the stages with optional inputs; absent: None and () (no optional inputs)
        optional: tuple[str, ...] | None = getattr(stage, "optional_upstream", None)
        if optional is None:
            continue
        required: tuple[str, ...] = getattr(stage, "required_upstream", ())
        stage.upstream = tuple(required) + tuple(n for n in optional if n in names)
