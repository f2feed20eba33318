"""Tokens shown to a reader: subword strings without the tokenizers' whitespace markers.

Byte-level BPE (GPT-2, BART, SmolLM2) writes a leading space as ``Ġ``, a newline as
``Ċ`` and a tab as ``ĉ``; SentencePiece (mBART-50, LLaMA) writes a word start as ``▁``.
A figure, a table or a count that shows these markers shows ``'Ġthe'`` and ``'the'`` as
two different things although a reader sees one word, so everything that shows or counts
tokens as words goes through `display_token`.
"""

from __future__ import annotations

# marker -> the whitespace it stands for
MARKERS = {"Ġ": " ", "▁": " ", "Ċ": "\n", "ĉ": "\t"}
# a token of whitespace only has no text to show once stripped: it is named instead
WHITESPACE_NAMES = {" ": "space", "\n": "newline", "\t": "tab", "\r": "carriage return"}

_TRANSLATION = str.maketrans(MARKERS)


def token_text(token: str) -> str:
    """``token`` with each whitespace marker replaced by the whitespace it stands for
    (running text, e.g. a highlighted document, keeps its spaces and line breaks)."""
    return token.translate(_TRANSLATION)


def display_token(token: str) -> str:
    """``token`` as a word: markers removed and surrounding whitespace stripped, so a token
    and its word-initial variant (``'the'``, ``'Ġthe'``, ``'▁the'``) display, and count, as
    one. A token of whitespace only is named in brackets (``'ĊĊ'`` -> ``'[newline newline]'``)
    rather than shown as nothing; the empty string stays empty. Idempotent."""
    text = token_text(token)
    shown = text.strip()
    if shown or not text:
        return shown
    return "[" + " ".join(WHITESPACE_NAMES.get(ch, f"U+{ord(ch):04X}") for ch in text) + "]"
