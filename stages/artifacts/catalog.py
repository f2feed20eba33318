"""What each stage writes, for the generated stage table (``nugget list --markdown``) and
the stage checklist (``tests/framework/test_stage_checklist.py``): the output class of its
typed header (``Stage[Config, Inputs, Output]``, `stages.framework.contract`), or, for a
stage no other stage reads (its header's output is ``None``), its `TERMINAL` entry. No
stage imports this module, so it enters no cache key.
"""

from __future__ import annotations

from stages.framework.stage import Stage

#: stages no other stage reads, so they have no contract class: what their output is
TERMINAL: dict[str, str] = {
    "report": "report.html (for people; `nugget report` prints its path)",
}


def output_of(stage: type[Stage]) -> str:
    """What ``stage`` (a stage class) writes: the output class of its typed header, or its
    `TERMINAL` entry; a KeyError naming the fix where it has neither."""
    if stage.output is not None:
        return stage.output.__name__
    if stage.name in TERMINAL:
        return TERMINAL[stage.name]
    raise KeyError(f"stage {stage.name!r} has no output contract: name its output class in its "
                   "Stage[Config, Inputs, Output] header (a terminal stage: list it in "
                   "stages/artifacts/catalog.py TERMINAL)")
