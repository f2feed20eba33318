"""The resolved config printed key by key with each field's help text.

The config dataclasses (`stages.config.schema` and the sections it embeds) carry
``metadata={"help": ...}`` on every field; `describe_config` walks them, so ``nugget
config`` and ``pipelines/sweep.py --help`` explain the keys without a second copy of the
text that could drift from the schema.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from stages.config.schema import PipelineConfig


@dataclasses.dataclass(frozen=True)
class ConfigEntry:
    """One field of the config: its dotted key, value (a section: None), help text."""

    key: str
    value: Any
    help: str
    section: bool


def config_entries(node: Any, prefix: str = "") -> Iterator[ConfigEntry]:
    """Every field of the config dataclass ``node`` in declaration order, a section
    before its fields."""
    for field in dataclasses.fields(node):
        key, value = f"{prefix}{field.name}", getattr(node, field.name)
        help_text = str(field.metadata.get("help", ""))
        if dataclasses.is_dataclass(value):
            yield ConfigEntry(key, None, help_text, True)
            yield from config_entries(value, f"{key}.")
        else:
            yield ConfigEntry(key, value, help_text, False)


def _matches(key: str, sections: Sequence[str]) -> bool:
    return not sections or any(key == s or key.startswith(f"{s}.") for s in sections)


def describe_config(cfg: PipelineConfig, sections: Sequence[str] = ()) -> list[str]:
    """Lines ``key = value  # help`` (``[section]  # help`` for a section) of ``cfg``,
    limited to the dotted ``sections`` (and what is under them) when given; a `KeyError`
    names a section that matches no key."""
    entries = list(config_entries(cfg))
    unknown = [s for s in sections if not any(_matches(e.key, [s]) for e in entries)]
    if unknown:
        raise KeyError(f"no config key or section {', '.join(map(repr, unknown))}")
    lines = []
    for e in entries:
        if _matches(e.key, sections):
            comment = f"  # {e.help}" if e.help else ""
            lines.append(f"[{e.key}]{comment}" if e.section else f"{e.key} = {e.value!r}{comment}")
    return lines
