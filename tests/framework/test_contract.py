"""Typed stage contracts (`stages.framework.contract`): a stage's header
``Stage[Config, Inputs, Output]`` gives its upstream and config keys, ``compute`` gets typed
objects, and an output that breaks its own contract is caught before it is published."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, TypeVar

import pytest

from stages.artifacts.base import ContractError, locate
from stages.framework.contract import (
    ContractDeclarationError,
    NoInputs,
    collected,
    optional,
    produced_by,
    reading,
    section,
)
from stages.framework.optional import resolve_optional_upstream
from stages.framework.stage import Artifact, Stage, StageContext
from stages.framework.tracking import RunLogger


@dataclass(frozen=True)
class Counts:
    """A contract class: ``counts.json`` holding ``{"n": int}``, written by ``count``."""

    STAGE: ClassVar[str] = "count"
    n: int
    scale: int = 1

    @classmethod
    def read(cls, source: Artifact | Path | str, scale: int = 1) -> Counts:
        where = locate(source, cls.STAGE)
        data = where.json("counts.json")
        if not isinstance(data.get("n"), int):
            raise where.error("counts.json", "has no integer 'n'", "n")
        return cls(data["n"] * scale, scale)


@dataclass(frozen=True)
class SectionA:
    size: int = 3


@dataclass(frozen=True)
class DoubleConfig:
    a: SectionA = section("data.a")
    seed: int = section("run.seed")


@dataclass(frozen=True)
class DoubleInputs:
    counts: Counts
    again: Counts = produced_by("recount", scale=10)
    extra: Counts | None = optional("maybe")


class Double(Stage[DoubleConfig, DoubleInputs, Counts]):
    name = "double"
    seen: ClassVar[list[tuple[DoubleConfig, DoubleInputs]]] = []

    def compute(self, ctx: StageContext, cfg: DoubleConfig, inputs: DoubleInputs) -> None:
        self.seen.append((cfg, inputs))
        n = inputs.counts.n + inputs.again.n + (inputs.extra.n if inputs.extra else 0)
        ctx.write_json("counts.json", {"n": n * cfg.a.size + cfg.seed})


class Broken(Stage[DoubleConfig, DoubleInputs, Counts]):
    name = "broken"

    def compute(self, ctx: StageContext, cfg: DoubleConfig, inputs: DoubleInputs) -> None:
        ctx.write_json("counts.json", {"n": "many"})


class NullLogger(RunLogger):
    def __init__(self) -> None:
        pass

    def log_metrics(self, metrics, step=None):  # noqa: ANN001 - RunLogger's own signature
        pass


def _output(tmp_path: Path, stage: str, n: int) -> Artifact:
    folder = tmp_path / stage
    folder.mkdir()
    (folder / "counts.json").write_text(json.dumps({"n": n}))
    return Artifact(stage, "k", str(folder), folder, {})


def _context(tmp_path: Path, stage: type[Stage], inputs: dict[str, Artifact]) -> StageContext:
    out = tmp_path / f"out-{stage.name}"
    out.mkdir()
    return StageContext(stage.name, "k", {"data.a": SectionA(size=2), "run.seed": 5}, inputs, out,
                        NullLogger(), tmp_path, str(tmp_path / "work"))


def test_the_header_gives_upstream_and_config_keys():
    assert Double.config_keys == ("data.a", "run.seed")
    assert Double.upstream == ("count", "recount")  # required only until the registry resolves
    assert Double.optional_upstream == ("maybe",) and Double.required_upstream == ("count", "recount")
    assert Double.output is Counts and Double.config_class is DoubleConfig and Double.inputs_class is DoubleInputs


def test_compute_gets_typed_config_and_inputs_read_through_their_classes(tmp_path):
    inputs = {"count": _output(tmp_path, "count", 1), "recount": _output(tmp_path, "recount", 2)}
    ctx = _context(tmp_path, Double, inputs)
    Double.seen.clear()
    Double().run(ctx)
    cfg, got = Double.seen[-1]
    assert cfg == DoubleConfig(SectionA(2), 5)
    assert got.counts == Counts(1) and got.again == Counts(20, 10) and got.extra is None  # read kwargs applied
    Double.check_output(ctx)
    assert Counts.read(ctx.output_dir).n == (1 + 20) * 2 + 5


def test_an_optional_input_is_read_once_its_stage_is_registered(tmp_path):
    class Maybe(Stage):
        name = "maybe"

    class Count(Stage):
        name = "count"

    class Recount(Stage):
        name = "recount"

    class Late(Stage[DoubleConfig, DoubleInputs, Counts]):
        name = "late"
        seen: ClassVar[list[DoubleInputs]] = []

        def compute(self, ctx: StageContext, cfg: DoubleConfig, inputs: DoubleInputs) -> None:
            self.seen.append(inputs)

    resolve_optional_upstream([Count, Recount, Maybe, Late])
    assert Late.upstream == ("count", "recount", "maybe")
    inputs = {s: _output(tmp_path, s, i) for i, s in enumerate(Late.upstream, 1)}
    Late().run(_context(tmp_path, Late, inputs))
    assert Late.seen[-1].extra == Counts(3)


def test_an_output_breaking_its_contract_is_caught_before_publishing(tmp_path):
    inputs = {"count": _output(tmp_path, "count", 1), "recount": _output(tmp_path, "recount", 2)}
    ctx = _context(tmp_path, Broken, inputs)
    Broken().run(ctx)
    with pytest.raises(ContractError, match="output of stage 'broken'.*field 'n' of 'counts.json'"):
        Broken.check_output(ctx)


def test_a_missing_required_input_names_the_stage(tmp_path):
    ctx = _context(tmp_path, Double, {"count": _output(tmp_path, "count", 1)})
    with pytest.raises(ContractDeclarationError, match="no output of stage 'recount'"):
        Double().run(ctx)


def test_declaration_errors_name_the_field():
    @dataclass(frozen=True)
    class NoPath:
        a: SectionA = SectionA()

    with pytest.raises(ContractDeclarationError, match="field 'a' names no config path"):
        class A(Stage[NoPath, DoubleInputs, Counts]):
            name = "a"

    @dataclass(frozen=True)
    class NotNullable:
        extra: Counts = optional("maybe")

    with pytest.raises(ContractDeclarationError, match="optional input is typed"):
        class B(Stage[DoubleConfig, NotNullable, Counts]):
            name = "b"

    @dataclass(frozen=True)
    class Twice:
        one: Counts
        two: Counts = reading(scale=2)

    with pytest.raises(ContractDeclarationError, match="one stage read by two fields"):
        class C(Stage[DoubleConfig, Twice, Counts]):
            name = "c"

    with pytest.raises(TypeError, match="upstream and config_keys come from its"):
        class D(Stage[DoubleConfig, DoubleInputs, Counts]):
            name = "d"
            upstream = ("count",)

    with pytest.raises(ContractDeclarationError, match="not a contract class"):
        class E(Stage[DoubleConfig, DoubleInputs, int]):
            name = "e"


ConfigT = TypeVar("ConfigT", bound=DoubleConfig)
InputsT = TypeVar("InputsT")


class Shared(Stage[ConfigT, InputsT, Counts]):
    """A generic base binding the output; its subclasses bind the config and inputs."""

    def compute(self, ctx: StageContext, cfg: ConfigT, inputs: InputsT) -> None:
        ctx.write_json("counts.json", {"n": cfg.seed})


class Narrowed(Shared[ConfigT, DoubleInputs]):
    """A generic base of a generic base: binds the inputs, leaves the config free."""


def test_a_generic_base_binds_part_of_the_header_for_its_subclasses(tmp_path):
    assert Shared.config_class is None and Shared.upstream == () and Narrowed.output is None  # no stage yet

    class Direct(Shared[DoubleConfig, DoubleInputs]):
        name = "direct"

    class Deep(Narrowed[DoubleConfig]):
        name = "deep"

    for stage in (Direct, Deep):
        assert (stage.config_class, stage.inputs_class, stage.output) == (DoubleConfig, DoubleInputs, Counts)
        assert stage.config_keys == ("data.a", "run.seed") and stage.upstream == ("count", "recount")
    inputs = {"count": _output(tmp_path, "count", 1), "recount": _output(tmp_path, "recount", 2)}
    ctx = _context(tmp_path, Deep, inputs)
    Deep().run(ctx)
    Deep.check_output(ctx)
    assert Counts.read(ctx.output_dir).n == 5

    with pytest.raises(ContractDeclarationError, match="three concrete classes"):
        class Unbound(Shared):  # a plain subclass binds nothing: its header stays generic
            name = "unbound"


def test_a_stage_without_a_header_keeps_its_hand_declared_contract():
    class Legacy(Stage):
        name = "legacy"
        upstream = ("count",)
        config_keys = ("data.a",)

    assert Legacy.config_class is None and Legacy.output is None
    assert Legacy.upstream == ("count",)
    with pytest.raises(NotImplementedError, match="override run"):
        Legacy().run(None)  # type: ignore[arg-type]


@dataclass(frozen=True)
class TallyInputs:
    counts: Counts
    others: Mapping[str, Counts] = collected(Counts, scale=10)


class Tally(Stage[DoubleConfig, TallyInputs, Counts]):
    name = "tally"
    seen: ClassVar[list[TallyInputs]] = []

    def compute(self, ctx: StageContext, cfg: DoubleConfig, inputs: TallyInputs) -> None:
        self.seen.append(inputs)


def test_a_collected_field_reads_every_registered_stage_of_its_class(tmp_path):
    class Count(Stage[DoubleConfig, NoInputs, Counts]):
        name = "count"

    class Third(Stage[DoubleConfig, NoInputs, Counts]):
        name = "third"

    class First(Stage[DoubleConfig, NoInputs, Counts]):
        name = "first"

    class Untyped(Stage):  # no header: its output class is unknown, so never collected
        name = "untyped"

    class Terminal(Stage[DoubleConfig, NoInputs, None]):
        name = "terminal"

    assert Tally.upstream == ("count",) and Tally.optional_upstream == ()
    resolve_optional_upstream([Count, Third, Untyped, Tally, Terminal, First])
    # registry order; not `count` (a field names it) nor the reader itself, though both write Counts
    assert Tally.upstream == ("count", "third", "first")
    inputs = {s: _output(tmp_path, s, i) for i, s in enumerate(Tally.upstream, 1)}
    Tally().run(_context(tmp_path, Tally, inputs))
    got = Tally.seen[-1]
    assert got.counts == Counts(1) and dict(got.others) == {"third": Counts(20, 10), "first": Counts(30, 10)}
    resolve_optional_upstream([Count, Tally])  # one registry less: static again, for that run
    assert Tally.upstream == ("count",)


def test_collected_field_declaration_errors():
    @dataclass(frozen=True)
    class TwoCollected:
        a: Mapping[str, Counts] = collected(Counts)
        b: Mapping[str, Counts] = collected(Counts)

    with pytest.raises(ContractDeclarationError, match=r"collected fields \['a', 'b'\]; declare one"):
        class F(Stage[DoubleConfig, TwoCollected, Counts]):
            name = "f"

    @dataclass(frozen=True)
    class NotAMapping:
        a: Counts = collected(Counts)

    with pytest.raises(ContractDeclarationError, match="field 'a': a collected field is typed Mapping"):
        class G(Stage[DoubleConfig, NotAMapping, Counts]):
            name = "g"
