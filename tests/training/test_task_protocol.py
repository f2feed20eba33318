"""Every training task class satisfies the written `TrainingTask` protocol (members and
their parameter names), and the compressor task refuses objectives it does not train."""

from __future__ import annotations

from pathlib import Path

import pytest

from stages.artifacts.data import LMRecords, MtDocuments
from stages.train.baseline_task import BaselineTask
from stages.train.full_ft_task import FullFinetuneTask
from stages.train.nugget2d_task import COMPRESSOR_OBJECTIVES, Nugget2DARTask, Nugget2DCompressorTask
from stages.train.nugget_task import NuggetTask
from stages.train.task import PROTOCOL_MEMBERS, TrainingTask, protocol_mismatches
from tests.lm_eval.fixtures import ADAPTER

MT, LM = MtDocuments(Path("d")), LMRecords(Path("d"))  # never read: the tasks are only inspected
INSTANCES = {
    NuggetTask: lambda: NuggetTask(MT, "t", "ae", nugget=None, model=None),
    BaselineTask: lambda: BaselineTask(MT, "t", "mt", nugget=None, model=None, bottleneck="cross"),
    Nugget2DCompressorTask: lambda: Nugget2DCompressorTask(LM, "b", None, objective="finetune"),
    Nugget2DARTask: lambda: Nugget2DARTask(LM, "b", None, threshold=0.5),
    FullFinetuneTask: lambda: FullFinetuneTask(LM, "b", "qa", lora_rank=4, lora_alpha=4, **ADAPTER),
}


@pytest.mark.parametrize("cls", list(INSTANCES), ids=lambda c: c.__name__)
def test_task_class_satisfies_the_protocol(cls):
    assert protocol_mismatches(cls) == []
    assert isinstance(INSTANCES[cls](), TrainingTask)


def test_protocol_members_are_the_protocol():
    declared = {n for n in vars(TrainingTask) if not n.startswith("_")} | set(TrainingTask.__annotations__)
    assert declared == set(PROTOCOL_MEMBERS)


def test_a_task_with_another_signature_is_reported():
    class Odd(Nugget2DARTask):
        def collate(self, examples, step, rank):  # type: ignore[override]
            return {}

    assert protocol_mismatches(Odd) == [
        "Odd.collate('examples', 'step', 'rank'): protocol has ('rows', 'step', 'rank', 'train')"
    ]


def test_compressor_task_takes_only_compressor_objectives():
    assert set(COMPRESSOR_OBJECTIVES) == {"autoencoding", "continuation", "finetune"}
    with pytest.raises(ValueError, match="autoregressive: Nugget2DARTask"):
        Nugget2DCompressorTask(LM, "b", None, objective="autoregressive")
    with pytest.raises(ValueError, match="expected one of"):
        NuggetTask(MT, "t", "xx", nugget=None, model=None)
