"""Range and choice checks for config dataclasses, driven by field metadata.

OmegaConf already rejects unknown keys and wrong types when a YAML or dotlist is merged
into a structured config; what it cannot express is "ratio must be in (0, 1]" or "one
of these names". Schema fields carry that in ``metadata`` and :func:`check` walks a
merged config and reports every violation with the key's full dotted path, so a bad
value fails at load time, before Ray starts.

Metadata keys understood (all optional):

- ``help``: one line describing the field (shown by ``pipelines.stage --help-config``).
- ``gt`` / ``ge`` / ``lt`` / ``le``: numeric bounds (exclusive / inclusive), of a number or
  of each element of a list of numbers. An integer field without ``le`` / ``lt`` is held
  to `INT_LIMIT` (2**31 - 1): no integer reaches a library unbounded.
- ``choices``: allowed values (for strings, or each element of a list of strings).
- ``nonempty``: the string or list must not be empty.
- ``unique``: the list must not repeat a value.

Every float, whatever its metadata, must be finite: ``inf`` and ``nan`` parse as floats
from YAML and from the command line, pass most bounds (``inf > 0``) and would only fail
deep inside training or ranking, or never.

Hooks a config class may define: ``cross_field_errors() -> list[str]`` (messages starting
with the field's relative key) and ``construction_errors() -> list[(field | None, str)]``,
run only when the object's own fields passed the checks above: the library validation of
the sections derived from ``nugget_core``'s configs (:mod:`stages.config.derive`).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterator
from functools import partial
from typing import Any

SPLITS = ("train", "dev", "test")  # the dataset splits every builder writes (a section's split choices)

# Python integers have no bound, but what reads them does: a huge vocabulary size fails deep
# inside a stage with an OverflowError, a huge count allocates or loops for hours
# (docs/reliability.md). Every integer field without an upper bound of its own ("le" / "lt")
# is held to int32's maximum, which every library the stages hand integers to accepts.
INT_LIMIT = 2**31 - 1


class ConfigError(ValueError):
    """A configuration problem; the message names the key's full dotted path."""


def _bound_errors(path: str, value: Any, meta: dict[str, Any]) -> Iterator[str]:
    """Bounds of a number, or of each number of a list (as choices apply to each item); an
    integer of a field without an upper bound of its own is held to `INT_LIMIT`."""
    for v in value if isinstance(value, list | tuple) else [value]:
        if v is None or isinstance(v, bool) or not isinstance(v, int | float):
            continue
        if isinstance(v, int) and "le" not in meta and "lt" not in meta and v > INT_LIMIT:
            yield f"{path}: value {v!r} must be <= {INT_LIMIT} (the bound of every integer field)"
            continue
        for key, ok, word in (
            ("gt", lambda x, b: x > b, ">"),
            ("ge", lambda x, b: x >= b, ">="),
            ("lt", lambda x, b: x < b, "<"),
            ("le", lambda x, b: x <= b, "<="),
        ):
            if key in meta and not ok(v, meta[key]):
                yield f"{path}: value {v!r} must be {word} {meta[key]}"


def _finite_errors(path: str, value: Any) -> Iterator[str]:
    """A float, or each float of a list / dict, that is inf or nan (any field, no metadata)."""
    if isinstance(value, dict):
        items = [(f"{path}.{k}", v) for k, v in value.items()]
    elif isinstance(value, list | tuple):
        items = [(f"{path}[{i}]", v) for i, v in enumerate(value)]
    else:
        items = [(path, value)]
    for where, v in items:
        if isinstance(v, float) and not math.isfinite(v):
            yield f"{where}: value {v!r} must be a finite number"


def _unique_errors(path: str, value: Any, meta: dict[str, Any]) -> Iterator[str]:
    if meta.get("unique") and isinstance(value, list | tuple) and len(set(value)) != len(value):
        yield f"{path}: {value!r} repeats a value"


def _choice_errors(path: str, value: Any, meta: dict[str, Any]) -> Iterator[str]:
    choices = meta.get("choices")
    if choices is None or value is None:
        return
    values = value if isinstance(value, list | tuple) else [value]
    for v in values:
        if v not in choices:
            yield f"{path}: value {v!r} is not one of {sorted(choices)}"


def errors(obj: Any, prefix: str = "") -> list[str]:
    """All violations in a dataclass instance (recursively), as ``path: message`` lines."""
    found: list[str] = []
    if not dataclasses.is_dataclass(obj):
        return found
    own = 0  # violations of this object's own fields
    for f in dataclasses.fields(obj):
        path = f"{prefix}{f.name}"
        value = getattr(obj, f.name)
        meta = dict(f.metadata)
        finite = list(_finite_errors(path, value))
        found.extend(finite)
        before = len(found)  # a library's own validation (construction_errors) may name it too
        if not finite:  # nan fails every bound too: one message per value
            found.extend(_bound_errors(path, value, meta))
        found.extend(_choice_errors(path, value, meta))
        found.extend(_unique_errors(path, value, meta))
        if meta.get("nonempty") and value is not None and len(value) == 0:
            found.append(f"{path}: must not be empty")
        own += len(found) - before
        if dataclasses.is_dataclass(value):
            found.extend(errors(value, prefix=f"{path}."))
        elif isinstance(value, dict):
            for k, v in value.items():
                found.extend(errors(v, prefix=f"{path}.{k}."))
        elif isinstance(value, list | tuple):  # e.g. eval.lm.contexts: checked item by item
            for i, v in enumerate(value):
                found.extend(errors(v, prefix=f"{path}[{i}]."))
    post = getattr(obj, "cross_field_errors", None)
    if callable(post):
        found.extend(f"{prefix}{msg}" for msg in post())
    construct = getattr(obj, "construction_errors", None)
    if callable(construct) and not own:
        for name, msg in construct():
            found.append(f"{prefix}{name}: {msg}" if name else f"{prefix.rstrip('.') or '<root>'}: {msg}")
    return found


def check(obj: Any) -> None:
    """Raise :class:`ConfigError` listing every violation found in ``obj``."""
    found = errors(obj)
    if found:
        raise ConfigError("invalid configuration:\n  " + "\n  ".join(found))


def spec(default: Any = dataclasses.MISSING, *, help: str, **meta: Any) -> Any:
    """A dataclass field with a help string and validation metadata.

    Mutable defaults (lists, dicts, dataclasses) are wrapped in a ``default_factory``.
    """
    metadata = {"help": help, **meta}
    if isinstance(default, list | dict) or dataclasses.is_dataclass(default):
        return dataclasses.field(default_factory=partial(_copy, default), metadata=metadata)
    return dataclasses.field(default=default, metadata=metadata)


def _copy(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):  # an instance (a section)
        return dataclasses.replace(value)
    return type(value)(value)
