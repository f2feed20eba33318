"""Every training task class satisfies the written `TrainingTask` protocol (members and
their parameter names) and implements it itself (no inherited methods), and the
compressor task refuses objectives it does not train."""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import pkgutil
from pathlib import Path
from typing import Generic

import pytest
from torch import nn

from stages.nugget.artifacts.data import MtDocuments, NuggetLMCorpus
from stages.nugget.baseline_task import BaselineTask
from stages.nugget.nugget_lm_task import NuggetLMTask
from stages.nugget.nugget_task import NuggetTask
from stages.nugget2d.artifacts import LMRecords
from stages.nugget2d.autoencoding_task import AutoencodingTask
from stages.nugget2d.full_ft_task import FullFinetuneTask
from stages.nugget2d.nugget2d_task import (
    COMPRESSOR_OBJECTIVES,
    LMBaselineTask,
    Nugget2DARTask,
    Nugget2DCompressorTask,
)
from stages.restorable.artifacts import RestorationTexts
from stages.restorable.restoration_task import RestorableBase, RestorationTask
from stages.restorable.retrieval_task import RetrievalTask
from stages.training.task import PROTOCOL_MEMBERS, TrainingTask, protocol_mismatches
from tests.lm_eval.fixtures import ADAPTER

MT, LM = MtDocuments(Path("d")), LMRecords(Path("d"))  # never read: the tasks are only inspected
INSTANCES = {
    NuggetTask: lambda: NuggetTask(MT, "t", "ae", nugget=None, model=None),
    BaselineTask: lambda: BaselineTask(MT, "t", "mt", nugget=None, model=None, bottleneck="cross"),
    Nugget2DCompressorTask: lambda: Nugget2DCompressorTask(LM, "b", None, objective="finetune"),
    Nugget2DARTask: lambda: Nugget2DARTask(LM, "b", None, threshold=0.5),
    LMBaselineTask: lambda: LMBaselineTask(LM, "b", None, system="compressive"),
    AutoencodingTask: lambda: AutoencodingTask(LM, "b", None, system="icae", slots=4),
    FullFinetuneTask: lambda: FullFinetuneTask(LM, "b", "qa", lora_rank=4, lora_alpha=4, **ADAPTER),
    NuggetLMTask: lambda: NuggetLMTask(NuggetLMCorpus(Path("d"), "s", ""), "t", "m", memory="nugget", ratio=0.1,
                                       chunk_tokens=4, segment_tokens=8, histories=[1], decoder_start_id=2, pad_id=1),
    RestorationTask: lambda: RestorationTask(RestorableBase("stage_ae", "m"), {}, RestorationTexts(
        Path("d"), "s", "", [1], {}), sentences=1),
    RetrievalTask: lambda: RetrievalTask(RestorableBase("stage_ae", "m"), {}, init="", data=None),
}


@pytest.mark.parametrize("cls", list(INSTANCES), ids=lambda c: c.__name__)
def test_task_class_satisfies_the_protocol(cls):
    assert protocol_mismatches(cls) == []
    assert isinstance(INSTANCES[cls](), TrainingTask)


def training_task_classes() -> set[type]:
    """The task classes the stages construct: every class whose name ends in "Task" defined
    in a ``*_task`` module of any package under ``stages`` (a study's tasks sit in its folder)."""
    import stages

    found = set()
    for info in pkgutil.walk_packages(stages.__path__, "stages."):
        if info.name.endswith("_task"):
            module = importlib.import_module(info.name)
            found |= {c for name, c in vars(module).items()
                      if inspect.isclass(c) and c.__module__ == module.__name__ and name.endswith("Task")}
    return found


def test_every_training_task_class_is_checked():
    assert training_task_classes() == set(INSTANCES)


def inherited_methods(cls: type) -> list[str]:
    """``Base.name`` for each method ``cls`` inherits: any function, property or static /
    class method a base other than object / Generic defines, except those a dataclass
    generates (a fields-only dataclass base keeps two constructors identical)."""
    generated = {"__init__", "__repr__", "__eq__", "__hash__", "__setattr__", "__delattr__", "__getstate__",
                 "__setstate__", "__match_args__"}
    found = []
    for base in cls.__mro__[1:]:
        if base in (object, Generic):
            continue
        for name, value in vars(base).items():
            code = isinstance(value, (staticmethod, classmethod, property)) or inspect.isfunction(value)
            if code and not (dataclasses.is_dataclass(base) and name in generated):
                found.append(f"{base.__name__}.{name}")
    return found


@pytest.mark.parametrize("cls", list(INSTANCES), ids=lambda c: c.__name__)
def test_task_class_implements_the_protocol_itself(cls):
    """A task class reads top to bottom: what tasks share are functions they call, not
    methods of a base class (its bases: at most a fields-only dataclass)."""
    assert inherited_methods(cls) == []
    assert all(name in vars(cls) or name in cls.__dataclass_fields__ for name in PROTOCOL_MEMBERS)


def test_inherited_methods_are_reported():
    @dataclasses.dataclass
    class Fields:
        n: int = 0

    @dataclasses.dataclass
    class Ok(Fields):
        m: int = 0

    class WithMethod(Fields):
        def helper(self) -> int:
            return self.n

    class Child(WithMethod):
        pass

    assert inherited_methods(Ok) == []
    assert inherited_methods(Child) == ["WithMethod.helper"]


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


def test_a_task_without_activation_checkpointing_is_reported():
    """The loop calls enable_activation_checkpointing when the job sets activation_checkpointing."""
    class Bare:
        find_unused_parameters = False

    assert "Bare: missing enable_activation_checkpointing" in protocol_mismatches(Bare)


@pytest.mark.parametrize("cls", [NuggetTask, RestorationTask, NuggetLMTask, FullFinetuneTask],
                         ids=lambda c: c.__name__)
def test_export_refuses_a_module_without_save_pretrained(cls, tmp_path):
    """A module handed back to a task is checked for what the task calls on it: an error naming it."""
    with pytest.raises(TypeError, match="Linear has no save_pretrained"):
        INSTANCES[cls]().export(nn.Linear(2, 2), tmp_path / "m")


def test_model_specific_calls_refuse_a_module_the_task_does_not_build(tmp_path):
    nugget2d = INSTANCES[Nugget2DARTask]()
    with pytest.raises(TypeError, match="Linear: not a Nugget2D task's model"):
        nugget2d.enable_activation_checkpointing(nn.Linear(2, 2))
    with pytest.raises(TypeError, match="Linear: not a Nugget2D task's model"):
        nugget2d.export(nn.Linear(2, 2), tmp_path / "m")
    with pytest.raises(TypeError, match="Linear: not the peft model FullFinetuneTask builds"):
        INSTANCES[FullFinetuneTask]().enable_activation_checkpointing(nn.Linear(2, 2))


def test_compressor_task_takes_only_compressor_objectives():
    assert set(COMPRESSOR_OBJECTIVES) == {"autoencoding", "continuation", "finetune"}
    with pytest.raises(ValueError, match="autoregressive: Nugget2DARTask"):
        Nugget2DCompressorTask(LM, "b", None, objective="autoregressive")
    with pytest.raises(ValueError, match="expected one of"):
        NuggetTask(MT, "t", "xx", nugget=None, model=None)


def test_autoencoding_task_cuts_training_documents_and_appends_eos(tmp_path):
    from tests.lm_eval.fixtures import make_tokenizer

    tok = make_tokenizer(tmp_path / "tok")
    task = AutoencodingTask(LM, str(tmp_path / "tok"), None, min_doc_tokens=3, max_doc_tokens=10)
    rows = [{"doc": list(range(5, 15))}, {"doc": list(range(20, 26))}]
    train = task.collate(rows, step=7, rank=0, train=True)
    lengths = train["doc_mask"].sum(dim=1).tolist()
    assert all(3 <= n <= len(r["doc"]) for n, r in zip(lengths, rows, strict=True))
    for b, n in enumerate(lengths):  # the target is the cut document, then EOS
        assert train["doc_ids"][b, :n].tolist() == rows[b]["doc"][:n]
        assert train["target_ids"][b, : n + 1].tolist() == rows[b]["doc"][:n] + [tok.eos_token_id]
        assert int(train["target_mask"][b].sum()) == n + 1
    again = task.collate(rows, step=7, rank=0, train=True)
    assert again["doc_mask"].sum(dim=1).tolist() == lengths  # seeded by (seed, step, rank)
    others = {tuple(task.collate(rows, step=s, rank=0, train=True)["doc_mask"].sum(dim=1).tolist()) for s in range(8)}
    assert len(others) > 1  # and it does vary with the step
    dev = task.collate(rows, step=-1, rank=0, train=False)
    assert dev["doc_mask"].sum(dim=1).tolist() == [10, 6]  # dev documents stay whole


def test_autoencoding_task_refuses_unknown_systems_and_slotless_icae():
    with pytest.raises(ValueError, match="autoencoding system 'gist'"):
        AutoencodingTask(LM, "b", None, system="gist")
    with pytest.raises(ValueError, match="icae needs slots >= 1"):
        AutoencodingTask(LM, "b", None, system="icae")


def test_nugget_lm_task_tells_the_compressive_memory_the_segment_wrapping(tmp_path):
    """The compressive LM pools a segment's text, not the <s> ... </s> the encoder reads."""
    from nugget_core import NuggetConfig, TinyBartSpec, build_tiny_bart, get_nugget_model
    from tests.lm_eval.fixtures import make_tokenizer

    tok = make_tokenizer(tmp_path / "tok")
    get_nugget_model(build_tiny_bart(tok, TinyBartSpec(d_model=16, layers=1, heads=2, ffn_dim=16)),
                     NuggetConfig(ratio=0.5, scorer_layer=0)).save_pretrained(tmp_path / "ae")
    task = NuggetLMTask(NuggetLMCorpus(Path("d"), "s", ""), str(tmp_path / "tok"), str(tmp_path / "ae"),
                        memory="chunk_mean", ratio=None, chunk_tokens=4, segment_tokens=8, histories=[1],
                        decoder_start_id=2, pad_id=1)
    assert task.build_model(None).config.segment_wrap == (1, 1)
