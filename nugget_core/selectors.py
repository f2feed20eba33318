"""Selectors: which tokens of each sequence become nuggets.

All selectors share one signature and return a bool selection ``[batch, n_tokens]``;
padding (``attention_mask == 0``) is never selected and every sequence gets >= 1 nugget.
The learned `TopKSelector` is the method; `ChunkSelector` and `SentenceSelector` are the
paper's rule-based ablations. ``boundary_mask`` carries the per-token flags a rule needs
(punctuation for chunking, end of sentence for sentences), computed by the caller.
"""

from __future__ import annotations

import string
from collections.abc import Callable, Iterable
from typing import Protocol

import torch

from .modes import SelectorKind
from .nuggets import nugget_counts


class Selector(Protocol):
    def __call__(
        self,
        scores: torch.Tensor,
        attention_mask: torch.Tensor,
        ratio: float,
        boundary_mask: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Args: scores ``[batch, n]`` (-inf at padding), attention_mask ``[batch, n]``,
        ratio r, optional boundary_mask ``[batch, n]`` bool. Returns ``[batch, n]`` bool."""
        ...


def _real_positions(attention_mask: torch.Tensor, row: int) -> list[int]:
    return attention_mask[row].nonzero().flatten().tolist()


class TopKSelector:
    """Top ``ceil(r * n)`` tokens by detached score (ties broken by position)."""

    def __call__(
        self,
        scores: torch.Tensor,
        attention_mask: torch.Tensor,
        ratio: float,
        boundary_mask: torch.Tensor | None = None,
    ) -> torch.Tensor:
        k = nugget_counts(attention_mask, ratio)
        masked = scores.detach().masked_fill(attention_mask.eq(0), float("-inf"))
        top = masked.topk(int(k.max().item()), dim=1).indices  # [batch, k_max], best first
        keep = torch.arange(top.shape[1], device=top.device) < k.unsqueeze(1)
        # topk indices are distinct per row, so one scatter marks exactly the first k_b.
        selected = torch.zeros_like(attention_mask, dtype=torch.bool).scatter_(1, top, keep)
        return selected & attention_mask.ne(0)


class ChunkSelector:
    """Split the ``n`` real tokens into ``ceil(r * n)`` near-equal contiguous chunks and
    take the last boundary token of each chunk (``boundary_mask``: commas and periods,
    `chunk_token_ids`, Nugget §7.1), else its last token."""

    def __call__(
        self,
        scores: torch.Tensor,
        attention_mask: torch.Tensor,
        ratio: float,
        boundary_mask: torch.Tensor | None = None,
    ) -> torch.Tensor:
        selected = torch.zeros_like(attention_mask, dtype=torch.bool)
        counts = nugget_counts(attention_mask, ratio).tolist()
        for row, k in enumerate(counts):
            positions = _real_positions(attention_mask, row)
            n = len(positions)
            for c in range(k):
                chunk = positions[c * n // k : (c + 1) * n // k]
                flagged = [p for p in chunk if boundary_mask is not None and boundary_mask[row, p]]
                selected[row, (flagged or chunk)[-1]] = True
        return selected


class SentenceSelector:
    """Select the end-of-sentence tokens given by ``boundary_mask``; a sequence without
    any gets its last real token. The ratio is ignored (the data fixes k)."""

    def __call__(
        self,
        scores: torch.Tensor,
        attention_mask: torch.Tensor,
        ratio: float,
        boundary_mask: torch.Tensor | None = None,
    ) -> torch.Tensor:
        if boundary_mask is None:
            raise ValueError("selector='sentence' needs boundary_mask (end-of-sentence flags)")
        real = attention_mask.ne(0)
        selected = boundary_mask.bool() & real
        for row in (~selected.any(dim=1)).nonzero().flatten().tolist():
            selected[row, _real_positions(attention_mask, row)[-1]] = True
        return selected


def build_selector(kind: SelectorKind) -> Selector:
    selectors: dict[SelectorKind, Callable[[], Selector]] = {
        SelectorKind.TOPK: TopKSelector,
        SelectorKind.CHUNK: ChunkSelector,
        SelectorKind.SENTENCE: SentenceSelector,
    }
    return selectors[SelectorKind(kind)]()


def token_flags(input_ids: torch.Tensor, token_ids: set[int]) -> torch.Tensor:
    """``[batch, n]`` bool: whether each token id is in ``token_ids``."""
    ids = torch.tensor(sorted(token_ids), dtype=input_ids.dtype, device=input_ids.device)
    return torch.isin(input_ids, ids)


PUNCTUATION = frozenset(string.punctuation) | frozenset("。，、！？；：…「」『』（）")
# Nugget §7.1: the chunking baseline ends a chunk at a comma or a period (and their CJK forms)
CHUNK_MARKS = frozenset(",.，。、")


def punctuation_token_ids(tokenizer, marks: Iterable[str] = PUNCTUATION) -> set[int]:
    """Ids of vocabulary entries made only of characters in ``marks`` (default: any
    punctuation), after stripping the word-start markers of byte-level BPE 'Ġ' and
    SentencePiece '▁'."""
    allowed = set(marks)
    out = set()
    for token, idx in tokenizer.get_vocab().items():
        text = token.replace("Ġ", "").replace("▁", "")
        if text and all(ch in allowed for ch in text):
            out.add(idx)
    return out


def chunk_token_ids(tokenizer) -> set[int]:
    """The tokens that end a chunk for `ChunkSelector`: commas and periods (§7.1)."""
    return punctuation_token_ids(tokenizer, CHUNK_MARKS)
