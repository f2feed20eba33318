"""Which contract class describes each stage's output: read by the generated stage table
(``nugget list --markdown``) and checked for every registered stage by
``tests/framework/test_stage_checklist.py``.

A stage with a typed header (``Stage[Config, Inputs, Output]``,
`stages.framework.contract`) declares its output class itself, and that wins (so a class
several stages write, such as `TrainedNugget2D`, needs no entry here). For the others a
contract names its producing stage in ``STAGE``. No stage imports this module, so it
enters no cache key.
"""

from __future__ import annotations

from types import ModuleType

from stages.artifacts import calibrate, data, evaluate, restorable, train
from stages.framework.stage import Stage

MODULES: tuple[ModuleType, ...] = (data, train, calibrate, evaluate, restorable)

#: stages no other stage reads, so they have no contract class: what their output is
TERMINAL: dict[str, str] = {
    "report": "report.html (for people; `nugget report` prints its path)",
}


def contracts() -> dict[str, type]:
    """Stage name -> the contract class of its output, for every stage that has one."""
    found: dict[str, type] = {}
    for module in MODULES:
        for cls in vars(module).values():
            if isinstance(cls, type) and cls.__module__ == module.__name__:
                stage = getattr(cls, "STAGE", "")
                if isinstance(stage, str) and stage:
                    found[stage] = cls
    return found


def output_of(stage: type[Stage]) -> str:
    """What ``stage`` (a stage class) writes: the output class of its typed header, else
    its contract class by name (``STAGE``), or its `TERMINAL` entry; a
    KeyError naming this module where it has none."""
    if stage.output is not None:
        return stage.output.__name__
    table = contracts()
    if stage.name in table:
        return table[stage.name].__name__
    if stage.name in TERMINAL:
        return TERMINAL[stage.name]
    raise KeyError(f"stage {stage.name!r} has no output contract: name its output class in its "
                   "Stage[Config, Inputs, Output] header, or give the class STAGE = "
                   f"{stage.name!r} in stages/artifacts/, or list it in stages/artifacts/catalog.py")
