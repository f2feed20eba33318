"""Subword and word-level perplexity from per-token NLLs (Nugget2D §5.2).

Word-level perplexity multiplies the probabilities of the subwords of each complete
word, i.e. it divides the same total NLL by the number of words instead of subwords:
equal to subword perplexity when every word is one subword, larger when words split.

Words are read off the tokens' surface text (`token_texts`: what each token adds to the
decoded text, so the tokenizer's own decoder turns SentencePiece's ``▁`` and byte-level
BPE's ``Ġ`` into the leading space; decoding a token alone would drop SentencePiece's,
which made a whole segment one "word"): a token starts a word when it begins with
whitespace or follows a token ending in whitespace (a newline token is a word of its
own, like WikiText's ``<eos>``).
Only whole words in the evaluated region count: a word whose first subword lies before
``start`` (its beginning was context, not predicted) is left out of the word count and
of the word NLL. Words equal to the corpus's out-of-vocabulary marker (WikiText's
``<unk>``) are excluded from both perplexities (Merity et al., 2016 convention).
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any


@dataclass
class PerplexityCounts:
    """Sums over a corpus: NLL (nats) and counts of the subwords / words they cover."""

    subword_nll: float = 0.0
    subwords: int = 0
    word_nll: float = 0.0
    words: int = 0
    oov_words: int = 0

    def add(self, other: PerplexityCounts) -> None:
        for name in ("subword_nll", "subwords", "word_nll", "words", "oov_words"):
            setattr(self, name, getattr(self, name) + getattr(other, name))

    @property
    def subword_ppl(self) -> float:
        return math.exp(self.subword_nll / self.subwords) if self.subwords else math.nan

    @property
    def word_ppl(self) -> float:
        return math.exp(self.word_nll / self.words) if self.words else math.nan


def token_texts(tokenizer: Any, ids: Sequence[int]) -> list[str]:
    """The text each of ``ids`` adds to the decoded sequence (leading spaces included).

    Decodes every prefix, so the tokenizer's decoder handles word-start markers and
    multi-token characters; O(n^2) token decodes, a fraction of a second for a 640-token
    segment, negligible beside the LM passes that score it.
    """
    texts, previous = [], ""
    for i in range(len(ids)):
        current = tokenizer.decode(list(ids[: i + 1]), skip_special_tokens=False,
                                   clean_up_tokenization_spaces=False)
        shared = len(os.path.commonprefix([previous, current]))  # a partial UTF-8 char may change
        texts.append(current[shared:])
        previous = current
    return texts


def word_ids(token_texts: Sequence[str]) -> list[int]:
    """Index of the word each token belongs to (see module docstring)."""
    ids, word = [], -1
    for i, text in enumerate(token_texts):
        if i == 0 or (text[:1].isspace()) or token_texts[i - 1][-1:].isspace():
            word += 1
        ids.append(word)
    return ids


def segment_counts(
    nll: Sequence[float], token_texts: Sequence[str], start: int, oov_token: str = ""
) -> PerplexityCounts:
    """Counts for one segment.

    Args:
        nll: NLL of predicting tokens ``start .. start + len(nll) - 1``.
        token_texts: surface text of every token of the segment (context included).
        start: index of the first predicted token (>= 1).
        oov_token: the corpus's OOV marker ("" = the corpus marks none).
    """
    if start < 1 or start + len(nll) > len(token_texts):
        raise ValueError(f"nll of {len(nll)} tokens from {start} does not fit {len(token_texts)} tokens")
    words = word_ids(token_texts)
    spans: dict[int, list[int]] = {}
    for i, w in enumerate(words):
        spans.setdefault(w, []).append(i)
    counts = PerplexityCounts()
    for span in spans.values():
        predicted = [i for i in span if i >= start]
        if not predicted:
            continue
        text = "".join(token_texts[i] for i in span).strip()
        if oov_token and text == oov_token:
            counts.oov_words += 1
            continue
        total = sum(float(nll[i - start]) for i in predicted)
        counts.subword_nll += total
        counts.subwords += len(predicted)
        if span[0] >= start:  # a whole word, beginning included
            counts.word_nll += total
            counts.words += 1
    return counts
