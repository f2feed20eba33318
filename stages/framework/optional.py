"""Optional upstream stages: a stage may read an artifact only when the stage that makes
it is part of the pipeline (e.g. the report reads the Nugget2D evaluations when they
are registered, and the sweep when it exists).

A stage lists ``required_upstream`` and ``optional_upstream``; the registry calls
:func:`resolve_optional_upstream` once with every registered stage, which sets
``upstream`` to the required names plus the registered optional ones, plus, for a typed
header whose inputs class has a `collected` field (`stages.framework.contract`), every
registered stage whose header writes the collected class and which no field names
(:func:`collected_upstream`). ``upstream`` stays static for the whole run, so cache keys
still cover every artifact a stage reads.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from stages.framework.contract import collected_stages

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
        stage.upstream = tuple(required) + tuple(n for n in optional if n in names) + collected_upstream(stage, stages)


def collected_upstream(stage: type[Stage], stages: Sequence[type[Stage]]) -> tuple[str, ...]:
    """The registered ``stages`` the collected field of ``stage``'s inputs class reads, in
    registry order (a stage's output class is its header's; none for a stage without one)."""
    if stage.inputs_class is None:
        return ()
    return collected_stages(stage.inputs_class, {s.name: s.output for s in stages}, own=stage.name)
