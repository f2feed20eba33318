"""How the Nugget LM (Nugget §6.2, fig. 10) reads a document: windows and their history.

A document of ``n`` tokens is read in *windows* of at most ``s`` tokens (the segment
length, 128 in the paper). The decoder reads the window's tokens causally; its memory is
the ``h`` segments of ``s`` tokens right before the window, each encoded on its own
("we split the distant tokens by the segment length s and encode each segment
independently"), oldest first. Only the tokens from ``score_from`` on are scored:

- training: windows start every ``s`` tokens and every token is scored (appendix B.2:
  "the training loss is calculated for all tokens in a segment in parallel");
- evaluation: windows start every ``stride`` tokens (``stride`` divides ``s``) and score
  their last ``stride`` tokens (the first window all of its tokens), so every token is
  scored once and, past the first window, with at least ``s - stride`` preceding tokens
  in the window (appendix B.2: at inference the model reads "as many preceding tokens as
  possible in the current segment ..., up to 128 tokens").

`collate_windows` turns windows of token-id documents into the tensors `NuggetLM.forward`
takes. Shapes: ``B`` windows, ``T`` = longest window, ``h`` history segments, ``S`` =
``s`` + the special tokens the encoder adds around a segment.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import torch

if TYPE_CHECKING:
    import numpy as np


class IndexedDocuments(Protocol):
    """Token-id documents by index: lists of ids, or views into flat arrays (the pipeline's
    corpus splits are NumPy slices, not copied: WikiText-103's train split is ~10^8 tokens)."""

    def __getitem__(self, doc: int, /) -> Sequence[int] | np.ndarray: ...


@dataclass(frozen=True)
class Window:
    """Tokens ``[start, end)`` of document ``doc``; those from ``score_from`` are scored."""

    doc: int
    start: int
    end: int
    score_from: int

    def __post_init__(self) -> None:
        if not 0 <= self.start <= self.score_from < self.end:
            raise ValueError(f"window {self}: need 0 <= start <= score_from < end")


@dataclass(frozen=True)
class SpecialTokens:
    """The special tokens a tokenizer puts around a text (BART: ``<s>`` ... ``</s>``;
    mBART-50: the language code ... ``</s>``): how a history segment of token ids is given
    to the encoder, as the autoencoder saw its documents. Call it on a list of ids."""

    prefix: tuple[int, ...]
    suffix: tuple[int, ...]

    @classmethod
    def of(cls, tokenizer: Any, probe: str = "a b") -> SpecialTokens:
        """Read from ``tokenizer`` by encoding ``probe`` with and without special tokens."""
        plain = list(tokenizer(probe, add_special_tokens=False)["input_ids"])
        full = list(tokenizer(probe)["input_ids"])
        for i in range(len(full) - len(plain) + 1):
            if full[i : i + len(plain)] == plain:
                return cls(tuple(full[:i]), tuple(full[i + len(plain) :]))
        raise ValueError(f"{type(tokenizer).__name__}: the ids of {probe!r} with special tokens ({full}) do not "
                         f"contain those without ({plain})")

    def __call__(self, ids: Sequence[int]) -> list[int]:
        return [*self.prefix, *(int(t) for t in ids), *self.suffix]


def windows(doc: int, length: int, segment: int, stride: int | None = None) -> list[Window]:
    """The windows of a ``length``-token document (see the module docstring): ``stride``
    None reads non-overlapping segments scoring everything (training)."""
    if segment < 1:
        raise ValueError(f"segment={segment!r} must be >= 1")
    stride = segment if stride is None else stride
    if not 0 < stride <= segment or segment % stride:
        raise ValueError(f"stride={stride!r} must divide segment={segment!r}")
    out, start = [], 0
    while True:
        end = min(start + segment, length)
        score_from = start if start == 0 else start + segment - stride
        if score_from >= end:
            break
        out.append(Window(doc, start, end, score_from))
        start += stride
    return out


def history_spans(start: int, segment: int, history: int) -> list[tuple[int, int]]:
    """The ``history`` segments before ``start`` (oldest first), cut at the document's
    start: fewer (the first partial) where the document has fewer tokens before it."""
    spans = []
    for j in range(history, 0, -1):
        lo, hi = max(start - j * segment, 0), start - (j - 1) * segment
        if hi > lo:
            spans.append((lo, hi))
    return spans


def collate_windows(
    docs: IndexedDocuments,
    batch: Sequence[Window],
    segment: int,
    history: int,
    *,
    decoder_start_id: int,
    pad_id: int,
    wrap_segment: Callable[[list[int]], list[int]],
) -> dict[str, torch.Tensor]:
    """Tensors of ``batch`` for `NuggetLM.forward`.

    Returns ``decoder_input_ids [B, T]`` (the decoder start token, then the window but its
    last token), ``labels [B, T]`` (the window's tokens; -100 before ``score_from`` and at
    padding) and, when ``history > 0``, ``history_ids [B, h, S]`` / ``history_mask
    [B, h, S]`` (each segment as ``wrap_segment`` makes it: the encoder's special tokens
    around it, as in autoencoding training; a row with fewer segments is right-aligned,
    the missing ones all padding, so the oldest slots are empty).
    """
    if history < 0:
        raise ValueError(f"history={history!r} must be >= 0")
    width = max(w.end - w.start for w in batch)
    dec = torch.full((len(batch), width), pad_id, dtype=torch.long, device="cpu")  # a host batch
    labels = torch.full((len(batch), width), -100, dtype=torch.long, device="cpu")
    segments: list[list[list[int]]] = []
    for i, w in enumerate(batch):
        tokens = list(docs[w.doc][w.start : w.end])
        dec[i, : len(tokens)] = torch.tensor([decoder_start_id, *tokens[:-1]], device="cpu")
        skip = w.score_from - w.start
        labels[i, skip : len(tokens)] = torch.tensor(tokens[skip:], device="cpu")
        segments.append([wrap_segment(list(docs[w.doc][lo:hi])) for lo, hi in history_spans(w.start, segment, history)])
    out = {"decoder_input_ids": dec, "labels": labels}
    if history:
        longest = max((len(s) for row in segments for s in row), default=1)
        ids = torch.full((len(batch), history, longest), pad_id, dtype=torch.long, device="cpu")
        mask = torch.zeros_like(ids)
        for i, row in enumerate(segments):
            for j, seg in enumerate(row, start=history - len(row)):
                ids[i, j, : len(seg)] = torch.tensor(seg, device="cpu")
                mask[i, j, : len(seg)] = 1
        out.update(history_ids=ids, history_mask=mask)
    return out
