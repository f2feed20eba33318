"""Which contract class describes each stage's output: read by the generated stage table
(``nugget list --markdown``) and checked for every registered stage by
``tests/framework/test_stage_checklist.py``.

Stages do not declare their output type; a contract names its producing stage in
``STAGE`` instead. That gives one class per stage where a class has one writer; the
classes several stages write (every evaluation table is an `EvalTable`, the Nugget2D
variants are `TrainedNugget2D`s, ``build_rr`` writes a `SimilarityDataset` like
``build_pi``) are listed in `SHARED`. No stage imports this module, so it enters no
cache key.
"""

from __future__ import annotations

from types import ModuleType

from stages.artifacts import calibrate, data, evaluate, restorable, train
from stages.artifacts.data import SimilarityDataset
from stages.artifacts.evaluate import EvalTable
from stages.artifacts.train import TrainedNugget2D

MODULES: tuple[ModuleType, ...] = (data, train, calibrate, evaluate, restorable)

#: stages whose output is a contract that names another stage (or none) in ``STAGE``
SHARED: dict[str, type] = {
    "build_rr": SimilarityDataset,
    "train_nugget2d_ft": TrainedNugget2D,
    "train_nugget2d_ar": TrainedNugget2D,
    "train_nugget2d_ae": TrainedNugget2D,
    **{name: EvalTable for name in ("eval_lm", "eval_qa", "eval_summarization", "eval_nugget2d_ae",
                                    "eval_nugget_lm", "eval_re_restoration", "eval_re_retrieval")},
}

#: stages no other stage reads, so they have no contract class: what their output is
TERMINAL: dict[str, str] = {
    "report": "report.html (for people; `nugget report` prints its path)",
}


def contracts() -> dict[str, type]:
    """Stage name -> the contract class of its output, for every stage that has one."""
    found = {
        cls.STAGE: cls
        for module in MODULES
        for cls in vars(module).values()
        if isinstance(cls, type) and cls.__module__ == module.__name__ and getattr(cls, "STAGE", "")
    }
    return {**found, **SHARED}


def output_of(stage: str) -> str:
    """What stage ``stage`` writes: its contract class's name, or its `TERMINAL` entry;
    a KeyError naming this module where it has neither."""
    table = contracts()
    if stage in table:
        return table[stage].__name__
    if stage in TERMINAL:
        return TERMINAL[stage]
    raise KeyError(f"stage {stage!r} has no output contract: give its output a class with STAGE = {stage!r} "
                   f"in stages/artifacts/, or list it in stages/artifacts/catalog.py")
