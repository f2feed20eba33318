"""The enums shared by Nugget and Nugget2D (re-exported by `nugget_core.nugget.config`).

Kept in a leaf module so the shared parts (`residual`, `selectors`, `scorer`) depend on
no method package.
"""

from __future__ import annotations

from enum import Enum, StrEnum
from typing import TypeVar

E = TypeVar("E", bound=Enum)


class ResidualMode(StrEnum):
    """How the nugget scores enter the attention logits of the nugget keys."""

    STRAIGHT_THROUGH = "straight_through"  # add s - stopgrad(s): forward unchanged
    DIRECT = "direct"  # add s (the paper's eq. 5): changes the forward pass
    NONE = "none"  # no residual: the scorer gets no gradient (ablation)


class SelectorKind(StrEnum):
    """Which tokens become nuggets."""

    TOPK = "topk"  # learned scorer, top ceil(r * n)
    CHUNK = "chunk"  # ceil(r * n) chunks, last punctuation token of each (else last token)
    SENTENCE = "sentence"  # end-of-sentence tokens given by the data


def enum_value(enum: type[E], name: str, value: object) -> E:
    """``enum(value)``; a ``ValueError`` naming the config field and the allowed values."""
    try:
        return enum(value)
    except ValueError:
        allowed = ", ".join(repr(m.value) for m in enum)
        raise ValueError(f"NuggetConfig.{name}={value!r} is not one of {allowed}") from None
