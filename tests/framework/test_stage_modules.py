"""One registered stage per module: a stage's cache key covers its module's import
closure (`stages.framework.keys`), so two stages in one module, or a stage module that
imports another, would re-key a stage when only its neighbour changed."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from stages.framework.provenance import closure_files
from stages.registry import ALL_STAGES

REPO = Path(__file__).resolve().parents[2]
NUGGET2D = ("train_nugget2d", "train_nugget2d_ft", "train_nugget2d_ar", "train_nugget2d_ae")


def module_path(stage: type) -> Path:
    """The source file defining ``stage``, relative to the repository root."""
    return Path(*stage.__module__.split(".")).with_suffix(".py")


def test_no_module_defines_two_registered_stages():
    by_module: dict[str, list[str]] = defaultdict(list)
    for stage in ALL_STAGES:
        by_module[stage.__module__].append(stage.name)
    shared = {module: names for module, names in by_module.items() if len(names) > 1}
    assert not shared, f"modules defining more than one registered stage: {shared}"
    assert len(by_module) == len(ALL_STAGES)


def test_the_nugget2d_stages_have_modules_of_their_own():
    stages = {s.name: s for s in ALL_STAGES}
    files = {name: module_path(stages[name]) for name in NUGGET2D}
    assert len(set(files.values())) == len(NUGGET2D), files
    assert all((REPO / f).is_file() for f in files.values())


def test_no_stage_module_is_in_another_stages_closure():
    """Editing one stage's module (e.g. train_nugget2d_ae.py) leaves every other stage's
    cache key alone: no stage imports another stage's module, not even a sibling's."""
    own = {s.name: module_path(s) for s in ALL_STAGES}
    reach = {s.name: set(closure_files(s.__module__, REPO)) for s in ALL_STAGES}
    assert all(own[name] in reach[name] for name in own)  # the walk does see a stage's own file
    leaks = sorted((other, name) for name, files in reach.items() for other, f in own.items()
                   if other != name and f in files)
    assert not leaks, f"(edited stage, stage whose key it changes): {leaks}"
    shared = REPO / "stages/nugget2d/nugget2d_stage.py"  # what the siblings share keys all of them
    assert all(shared.relative_to(REPO) in reach[name] for name in NUGGET2D)
