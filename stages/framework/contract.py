"""A stage's typed contract: the config it reads, the outputs it reads and what it writes,
declared once in its class header::

    @dataclass(frozen=True)
    class QAConfig:
        qa: QASection = section("eval.qa")           # the config section at that path
        dtype: str = section("eval.dtype")

    @dataclass(frozen=True)
    class QAInputs:
        records: LMRecords                          # the output of LMRecords.STAGE ("build_lm")
        compressor: TrainedNugget2D = produced_by("train_nugget2d")
        sweep: NuggetSweep | None = optional()       # read when its stage is registered

    class EvalQA(Stage[QAConfig, QAInputs, EvalTable]):
        name = "eval_qa"

        def compute(self, ctx: StageContext, cfg: QAConfig, inputs: QAInputs) -> None: ...

The three type arguments are the whole contract (Dagster's typed asset parameters, as a
class): ``config_keys`` (what enters the cache key) are the `section` paths of the config
class, ``upstream`` the producing stage of each input, and the framework hands
``compute`` the sections as the config class and each upstream output read through its
contract class (``Kind.read(artifact, **read_kwargs)``); before the output is published
it is read back through the output class, so an output that breaks its own contract never
looks complete. An input's producer is its class's ``STAGE`` unless `produced_by` names
another (a contract several stages write: every evaluation table is an `EvalTable`).

A generic base class may bind part of the header for the stages that share its code
(``class Base(Stage[ConfigT, InputsT, Trained])``, ``class Mine(Base[MyConfig, MyInputs])``):
the header of ``Mine`` is found through ``Base`` with its type variables substituted, and
``Base`` itself, whose variables are free, gets no contract.

A reader of every stage of a kind (the report: each evaluation's table) declares one
`collected` field instead of a field per stage::

    @dataclass(frozen=True)
    class ReportInputs:
        eval_qa: StoredEvalTable | None = optional("eval_qa")   # named: its own paper table
        evaluations: Mapping[str, StoredEvalTable] = collected(EvalTable)

It holds, by stage name, the output of every registered stage whose header writes
``EvalTable`` and which no other field names, each read through the mapping's value class.
Which stages those are is settled once per run, with the registered set
(`stages.framework.optional.resolve_optional_upstream` puts them in ``upstream``, so the
cache key covers them); at run time the field gets every upstream output no other field
reads, which is why an inputs class has one collected field at most. A new stage of that
kind is then read (and shown) once it is registered, with no edit to its reader.

This module only reads declarations; it imports no stage and no artifact class.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

SECTION = "stage_contract.section"
PRODUCER = "stage_contract.producer"
OPTIONAL = "stage_contract.optional"
READ_KWARGS = "stage_contract.read_kwargs"
COLLECTED = "stage_contract.collected"


class ContractDeclarationError(TypeError):
    """A stage's config, inputs or output class is declared so the framework cannot use it."""


class Contract(Protocol):
    """What an input or output class offers: a checked read of a stage's output (an
    `Artifact` or a directory; `stages.artifacts`), raising on a missing or malformed part."""

    @classmethod
    def read(cls, source: Any, /, *args: Any, **kwargs: Any) -> Any: ...


@dataclass(frozen=True)
class NoInputs:
    """The inputs class of a stage that reads no other stage's output."""


def section(path: str) -> Any:
    """A field of a stage's config class: the config section (or value) at dotted ``path``."""
    if not path or path.startswith(".") or path.endswith("."):
        raise ContractDeclarationError(f"section path {path!r}: expected a dotted path such as 'eval.qa'")
    return dataclasses.field(metadata={SECTION: path})


def produced_by(stage: str, **read_kwargs: Any) -> Any:
    """A field of a stage's inputs class read from the output of ``stage`` (where the
    field's class has several producers, or none), with ``read_kwargs`` for its ``read``."""
    return dataclasses.field(metadata={PRODUCER: stage, READ_KWARGS: read_kwargs})


def reading(**read_kwargs: Any) -> Any:
    """A field of a stage's inputs class read from its class's own ``STAGE`` with
    ``read_kwargs`` (e.g. ``reading(role="chat")`` for `BaseLM`)."""
    return dataclasses.field(metadata={READ_KWARGS: read_kwargs})


def optional(stage: str = "", **read_kwargs: Any) -> Any:
    """A field (typed ``Kind | None``) read only when its producing stage is registered in
    the pipeline (`stages.framework.optional`); None otherwise."""
    meta: dict[str, Any] = {OPTIONAL: True, READ_KWARGS: read_kwargs}
    if stage:
        meta[PRODUCER] = stage
    return dataclasses.field(default=None, metadata=meta)


@dataclass(frozen=True)
class SectionField:
    """One field of a config class: its name and the config path it holds."""

    name: str
    path: str


@dataclass(frozen=True)
class InputField:
    """One field of an inputs class: the stage whose output it reads, as which class."""

    name: str
    stage: str
    kind: type[Contract]
    optional: bool
    read_kwargs: Mapping[str, Any]


def _fields(cls: type, role: str) -> tuple[dataclasses.Field[Any], ...]:
    if not dataclasses.is_dataclass(cls):
        raise ContractDeclarationError(f"{role} class {cls.__qualname__}: expected a dataclass")
    return dataclasses.fields(cls)


def section_fields(config_cls: type) -> list[SectionField]:
    """The fields of a stage's config class, each with its config path."""
    found = []
    for f in _fields(config_cls, "config"):
        if SECTION not in f.metadata:
            raise ContractDeclarationError(
                f"config class {config_cls.__qualname__}: field {f.name!r} names no config path; "
                f"declare it as {f.name}: <type> = section('<dotted.path>')")
        found.append(SectionField(f.name, f.metadata[SECTION]))
    return found


def _hints(cls: type) -> dict[str, Any]:
    try:
        return typing.get_type_hints(cls)
    except NameError as exc:  # an annotation imported only under TYPE_CHECKING
        raise ContractDeclarationError(
            f"inputs class {cls.__qualname__}: {exc}; import every input class at run time "
            "(the framework reads inputs through it)") from exc


def _unwrap_optional(hint: Any) -> tuple[Any, bool]:
    """``Kind | None`` -> (Kind, True); ``Kind`` -> (Kind, False)."""
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        if len(args) == 1 and len(typing.get_args(hint)) == 2:
            return args[0], True
    return hint, False


def input_fields(inputs_cls: type) -> list[InputField]:
    """The fields of a stage's inputs class, each with its producing stage and class."""
    hints = _hints(inputs_cls)
    found = []
    for f in _fields(inputs_cls, "inputs"):
        if COLLECTED in f.metadata:  # no one producing stage: `collected_field`
            continue
        kind, nullable = _unwrap_optional(hints[f.name])
        is_optional = bool(f.metadata.get(OPTIONAL, False))
        where = f"inputs class {inputs_cls.__qualname__}: field {f.name!r}"
        if is_optional != nullable:
            raise ContractDeclarationError(
                f"{where}: an optional input is typed '<Kind> | None' and declared with optional(), "
                "a required one neither")
        if not isinstance(kind, type) or not callable(getattr(kind, "read", None)):
            raise ContractDeclarationError(f"{where}: {kind!r} is not a contract class with a read() classmethod")
        stage = f.metadata.get(PRODUCER) or getattr(kind, "STAGE", "")
        if not stage:
            raise ContractDeclarationError(
                f"{where}: {kind.__name__} names no producing stage (no STAGE); declare it with "
                "produced_by('<stage>')")
        found.append(InputField(f.name, stage, kind, is_optional, dict(f.metadata.get(READ_KWARGS, {}))))
    stages = [i.stage for i in found]
    if len(set(stages)) != len(stages):
        raise ContractDeclarationError(f"inputs class {inputs_cls.__qualname__}: one stage read by two fields "
                                       f"({stages}); read it once and derive the rest in compute")
    return found


def producer_names(inputs_cls: type) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(required, optional) producing stages of an inputs class's fields, in field order
    (checked as `input_fields` checks them, when the stage class is defined)."""
    fields = input_fields(inputs_cls)
    return (tuple(f.stage for f in fields if not f.optional), tuple(f.stage for f in fields if f.optional))


def _header_arguments(cls: type, generic: type) -> tuple[Any, ...] | None:
    """The type arguments ``cls``'s header gives ``generic``: its own ``generic[C, I, O]``
    base, or one inherited through a generic subclass of ``generic`` (``Base[C, I]`` where
    ``class Base(generic[ConfigT, InputsT, O])``), each type variable replaced by what the
    header binds it to; None where no header names ``generic``."""
    for base in getattr(cls, "__orig_bases__", ()):
        origin = typing.get_origin(base)
        if not (isinstance(origin, type) and issubclass(origin, generic)):
            continue
        args = typing.get_args(base)
        if origin is generic:
            return args
        inherited = _header_arguments(origin, generic)
        if inherited is None:
            return None
        bound = dict(zip(getattr(origin, "__parameters__", ()), args, strict=True))  # Base[...] checked the count
        return tuple(bound.get(a, a) if isinstance(a, typing.TypeVar) else a for a in inherited)
    return None


def contract_arguments(cls: type, generic: type) -> tuple[type, type, type[Contract] | None] | None:
    """The (config, inputs, output) classes ``cls`` gives its base ``generic[C, I, O]`` in
    its class header, directly or through a generic base class that binds some of them
    (`_header_arguments`); None where it gives none (it subclasses the bare class) and for
    a generic base class itself (its type variables are bound by its subclasses). An
    output of ``None`` is a terminal stage's: nothing reads it."""
    args = _header_arguments(cls, generic)
    if args is None:
        return None
    free = [a for a in args if isinstance(a, typing.TypeVar)]
    if free and len(args) == 3 and all(a in getattr(cls, "__parameters__", ()) for a in free):
        return None  # a generic base class (e.g. the Nugget2D training stages' shared base)
    if len(args) != 3 or free:
        raise ContractDeclarationError(f"stage class {cls.__qualname__}: give {generic.__name__} "
                                       "three concrete classes: [Config, Inputs, Output]")
    config_cls, inputs_cls, output = args
    _fields(config_cls, "config")
    _fields(inputs_cls, "inputs")
    if output is None or output is type(None):
        return config_cls, inputs_cls, None
    if not callable(getattr(output, "read", None)):
        raise ContractDeclarationError(f"stage class {cls.__qualname__}: output {output!r} is not a "
                                       "contract class with a read() classmethod")
    return config_cls, inputs_cls, output


def build_config(config_cls: type, sections: Mapping[str, Any]) -> Any:
    """An instance of ``config_cls`` holding the declared ``sections`` (path -> value)."""
    return config_cls(**{f.name: sections[f.path] for f in section_fields(config_cls)})


def read_inputs(inputs_cls: type, artifacts: Mapping[str, Any]) -> Any:
    """An instance of ``inputs_cls``: each field the output of its stage in ``artifacts``
    (stage -> `Artifact`), read through the field's class; an optional field whose stage
    is not in ``artifacts`` (not registered) is None."""
    values: dict[str, Any] = {}
    for f in input_fields(inputs_cls):
        if f.stage not in artifacts:
            if f.optional:
                values[f.name] = None
                continue
            raise ContractDeclarationError(f"inputs class {inputs_cls.__qualname__}: no output of stage "
                                           f"{f.stage!r} among the stage's upstream {sorted(artifacts)}")
        values[f.name] = f.kind.read(artifacts[f.stage], **f.read_kwargs)
    values.update(read_collected(inputs_cls, artifacts))
    return inputs_cls(**values)


# -- collected fields: every registered stage of one output class (module docstring) ------------


def collected(kind: type, **read_kwargs: Any) -> Any:
    """A field (typed ``Mapping[str, Reader]``) holding, by stage name, the output of every
    registered stage whose header's output class is ``kind`` and which no other field of
    the inputs class names, each read through ``Reader`` (``kind`` itself, or a class
    reading it with where it came from, e.g. `StoredEvalTable` for `EvalTable`) with
    ``read_kwargs``; empty where there is none."""
    if not isinstance(kind, type):
        raise ContractDeclarationError(f"collected({kind!r}): expected the output class the stages write")
    return dataclasses.field(default_factory=dict, metadata={COLLECTED: kind, READ_KWARGS: read_kwargs})


@dataclass(frozen=True)
class CollectedField:
    """The collected field of an inputs class: the output class it collects (``kind``), the
    class each output is read through (``reader``) and that read's keyword arguments."""

    name: str
    kind: type
    reader: type[Contract]
    read_kwargs: Mapping[str, Any]


def collected_field(inputs_cls: type) -> CollectedField | None:
    """The `collected` field of ``inputs_cls`` (None: it has none), checked: typed
    ``Mapping[str, Reader]`` with a contract class as ``Reader``, one per inputs class."""
    found = [f for f in _fields(inputs_cls, "inputs") if COLLECTED in f.metadata]
    if not found:
        return None
    if len(found) > 1:
        raise ContractDeclarationError(
            f"inputs class {inputs_cls.__qualname__}: collected fields {[f.name for f in found]}; declare one "
            "(at run time it holds every upstream output no other field reads)")
    f = found[0]
    hint = _hints(inputs_cls)[f.name]
    args = typing.get_args(hint)
    reader = args[1] if len(args) == 2 else None
    if typing.get_origin(hint) is not Mapping or args[0] is not str or not isinstance(reader, type) \
            or not callable(getattr(reader, "read", None)):
        raise ContractDeclarationError(
            f"inputs class {inputs_cls.__qualname__}: field {f.name!r}: a collected field is typed "
            f"Mapping[str, <contract class>] (stage name -> output), not {hint!r}")
    return CollectedField(f.name, f.metadata[COLLECTED], reader, dict(f.metadata.get(READ_KWARGS, {})))


def collected_stages(inputs_cls: type, outputs: Mapping[str, type | None], own: str = "") -> tuple[str, ...]:
    """The stages the collected field of ``inputs_cls`` reads, in the order of ``outputs``
    (each registered stage -> its header's output class, None without one): those writing
    the field's class, except the ones another field names and ``own`` (the reader itself)."""
    field = collected_field(inputs_cls)
    if field is None:
        return ()
    named = {f.stage for f in input_fields(inputs_cls)} | {own}
    return tuple(s for s, output in outputs.items() if output is field.kind and s not in named)


def read_collected(inputs_cls: type, artifacts: Mapping[str, Any]) -> dict[str, Any]:
    """{the collected field's name: {stage: its output read through the field's class}} for
    every artifact of ``artifacts`` no other field reads (the stage's upstream holds exactly
    the collected stages besides those, `collected_stages`); {} without a collected field."""
    field = collected_field(inputs_cls)
    if field is None:
        return {}
    named = {f.stage for f in input_fields(inputs_cls)}
    return {field.name: {stage: field.reader.read(artifact, **field.read_kwargs)
                         for stage, artifact in artifacts.items() if stage not in named}}
