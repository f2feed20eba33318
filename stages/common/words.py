"""Which word each token belongs to: the one convention of word-level perplexity
(Nugget §6.2 footnote 6, Nugget2D §5.2: a word's probability is the product of its
subwords'), shared by ``eval_lm`` (`stages.evaluation.perplexity`) and the Nugget LM
data (`stages.corpora.tokens.word_flags`).

A *word* is a maximal run of non-whitespace characters. A token belongs to the word of
the first non-whitespace character at or after its start, so a token of whitespace only
(SmolLM2's and LLaMA's lone space before digits, ``" in 1928"`` ->
``" in", " ", "1", "9", "2", "8"``; WikiText's ``" \\n"``) belongs to the word that
follows it and its probability is a factor of that word's. Whitespace after the last
word of the text belongs to that last word, so every token of a text with a word is in
one. A token that is no part of the text (a control token: BOS, EOS, padding) is in
none.

Where a scored region starts inside a text (``eval_lm``'s recent tokens after their history,
`stages.evaluation.perplexity.segment_counts`), a word counts as a whole word of the region
when none of its characters lies before it: a word whose only earlier piece is whitespace
(the ``" \n"`` ending the previous line) counts, as lm-evaluation-harness counts every word
of a document; a word with letters in the context (truly cut by the window) does not.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Sequence

NO_WORD = -1  # the word index of a control token, or of any token of a text without a word
_WORD = re.compile(r"\S+")
_NON_SPACE = re.compile(r"\S")


def word_spans(text: str) -> list[tuple[int, int]]:
    """The character span of each word of ``text``, in order."""
    return [(m.start(), m.end()) for m in _WORD.finditer(text)]


def token_words(text: str, spans: Sequence[tuple[int, int] | None]) -> list[int]:
    """Per token, the index (into `word_spans`) of the word it belongs to, or `NO_WORD`.

    Args:
        text: the text the tokens spell.
        spans: each token's ``(start, end)`` characters in ``text`` (a tokenizer's offset
            mapping, or the running lengths of decoded token texts); None for a control
            token. Only the start is read: a token that spells nothing (the first byte of
            a character split over byte tokens) joins the word at its position.
    """
    starts = [a for a, _ in word_spans(text)]
    out = []
    for span in spans:
        if span is None or not starts:
            out.append(NO_WORD)
            continue
        found = _NON_SPACE.search(text, span[0])
        out.append(bisect.bisect_right(starts, found.start()) - 1 if found else len(starts) - 1)
    return out
