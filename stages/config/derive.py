"""Config sections derived from a library's dataclass: one source of truth for its fields.

``nugget_core``'s ``NuggetConfig``, ``Nugget2DConfig`` and ``TinyBartSpec`` are the model
configs; the pipeline embeds them (``nugget``, ``nugget2d``, ``model.seq2seq.tiny``)
without re-typing a field. :func:`section_of` reads ``dataclasses.fields`` of such a class
and builds an OmegaConf-ready twin with the same names, types, defaults and metadata:

- enum fields become ``str`` fields holding the enum's *values* (``residual:
  straight_through``), with ``choices`` = those values, so YAML, overrides and the logged
  config read as today and the cache key hashes plain strings;
- ``int | None`` etc. stay optional (``null`` in YAML); lists of plain types stay lists;
- ``help`` and the bounds (``gt`` / ``ge`` / ``lt`` / ``le`` / ``choices`` / ``nonempty``)
  come from the library field's ``metadata`` and are checked by
  :mod:`stages.config.validate`, which then runs the library class's own validation
  (``__post_init__``) via :meth:`construction_errors` and reports it under the full key;
- any other field type (tuples, callables, torch types...) fails at import with the
  field's name, so a new library field that the pipeline cannot carry is noticed at once.

A section ``s`` turns into the library object with ``s.build()``, i.e.
``LibraryClass(**{f: getattr(s, f)})``; the section itself is a plain picklable
dataclass (its class lives in the module that calls :func:`section_of`), a subclass of
:class:`DerivedSection`. Its fields are made at import, so a type checker sees none of
them: it types them ``Any``, ``build()`` as the library class (the schema names each
section's type as ``DerivedSection[LibraryClass]``).
"""

from __future__ import annotations

import dataclasses
import re
import types
import typing
from collections.abc import Callable
from enum import Enum
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar

_PLAIN = (int, float, bool, str)
CoreT = TypeVar("CoreT")


@dataclasses.dataclass
class DerivedSection(Generic[CoreT]):
    """The base of every class :func:`section_of` makes (which sets the class attributes)."""

    core_class: ClassVar[type]  # the library class mirrored
    field_names: ClassVar[tuple[str, ...]]  # its init fields, each a field of the section
    # ``<core class name>.<field>`` in a message of its validation: names the field
    field_pattern: ClassVar[re.Pattern[str]]

    def build(self) -> CoreT:
        """The library object (``core_class(**fields)``); raises what its validation raises."""
        built: CoreT = self.core_class(**{n: getattr(self, n) for n in self.field_names})
        return built

    def construction_errors(self) -> list[tuple[str | None, str]]:
        """``(field or None, message)`` for what ``core_class``'s own validation rejects."""
        try:
            self.build()
        except (TypeError, ValueError) as exc:
            match = self.field_pattern.search(str(exc))
            return [(match.group(1) if match else None, f"rejected by {self.core_class.__name__}: {exc}")]
        return []

    if TYPE_CHECKING:  # the mirrored fields, made at import (see the module docstring)
        def __getattr__(self, name: str) -> Any: ...


def _plain_type(tp: Any, where: str) -> tuple[Any, tuple[Any, ...] | None]:
    """(type OmegaConf can hold, choices implied by an enum or None)."""
    if isinstance(tp, type) and issubclass(tp, Enum):
        return str, tuple(m.value for m in tp)
    if tp in _PLAIN:
        return tp, None
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        rest = [a for a in args if a is not type(None)]
        if len(rest) == 1 and len(args) == 2:
            inner, choices = _plain_type(rest[0], where)
            return typing.Optional[inner], choices  # noqa: UP045 (a runtime type object)
    if origin is list and len(args) == 1:
        inner, choices = _plain_type(args[0], where)
        if inner in _PLAIN:
            return types.GenericAlias(list, (inner,)), choices  # list[inner]
    if origin is dict and len(args) == 2 and args[0] is str:
        inner, choices = _plain_type(args[1], where)
        if inner in _PLAIN:
            return types.GenericAlias(dict, (str, inner)), choices  # dict[str, inner]
    raise TypeError(
        f"{where}: type {tp!r} cannot be carried by the pipeline config (supported: int, "
        "float, bool, str, Enum, X | None, list[X], dict[str, X] of those)"
    )


def _plain_value(value: Any) -> Any:
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, list):
        return [_plain_value(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain_value(v) for k, v in value.items()}
    return value


def _field(f: dataclasses.Field, tp: Any, choices: tuple[Any, ...] | None) -> dataclasses.Field:
    meta = dict(f.metadata)
    if choices is not None:
        meta.setdefault("choices", choices)
    meta.setdefault("help", "")
    if f.default is not dataclasses.MISSING:
        return dataclasses.field(default=_plain_value(f.default), metadata=meta)
    if f.default_factory is not dataclasses.MISSING:
        factory: Callable[[], Any] = f.default_factory
        return dataclasses.field(default_factory=lambda: _plain_value(factory()), metadata=meta)
    return dataclasses.field(metadata=meta)


def section_of(source: type[CoreT], name: str, module: str, doc: str | None = None) -> type[DerivedSection[CoreT]]:
    """An OmegaConf-ready dataclass ``name`` (defined in ``module``) mirroring ``source``.

    Assign the result to the module-level name ``name`` of ``module`` (pickling finds the
    class there).
    """
    if not dataclasses.is_dataclass(source):
        raise TypeError(f"{source!r} is not a dataclass")
    hints = typing.get_type_hints(source)
    specs = []
    for f in dataclasses.fields(source):
        if not f.init:
            continue
        tp, choices = _plain_type(hints[f.name], f"{source.__qualname__}.{f.name}")
        specs.append((f.name, tp, _field(f, tp, choices)))
    names = tuple(n for n, _, _ in specs)
    namespace = {
        "__module__": module,
        "__doc__": doc or f"``{source.__module__}.{source.__qualname__}``'s fields (derived).",
        "core_class": source,
        "field_names": names,
        "field_pattern": re.compile(rf"\b{re.escape(source.__name__)}\.({'|'.join(map(re.escape, names))})\b"),
    }
    made = dataclasses.make_dataclass(name, specs, bases=(DerivedSection,), namespace=namespace)
    assert issubclass(made, DerivedSection)  # tells the type checker what make_dataclass made
    return made
