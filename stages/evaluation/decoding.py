"""The text of one sequence of token ids, typed as one.

transformers types ``PreTrainedTokenizerBase.decode`` as ``str | list[str]`` because the same
method decodes a batch (a list of id lists) to a list; one sequence decodes to a str, and
`decode_ids` says so to the type checker (and raises on a batch, whose texts would otherwise
flow on as one "text").
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase


def decode_ids(tokenizer: PreTrainedTokenizerBase, ids: Sequence[int], **options: bool) -> str:
    """``tokenizer.decode`` of the one sequence ``ids`` (``options``: its keyword flags, e.g.
    ``skip_special_tokens``)."""
    text = tokenizer.decode(list(ids), **options)
    if not isinstance(text, str):
        raise TypeError(f"decode_ids decodes one sequence of token ids; it got a batch of {len(text)}")
    return text
