"""Sentence splitting and light markup cleanup, tokenizer-free and deterministic.

Sentences end at ``.``, ``!``, ``?`` (optionally followed by closing quotes/brackets)
before whitespace and an upper-case letter, digit or opening quote, or at the CJK marks
``。！？`` anywhere. This is deliberately simple (no abbreviation list): sentences are
only units that documents never split, so an occasional over-split is harmless, while an
under-split only makes a unit longer. Where the sentence is the unit a paper measures (the
RE texts of 1 / 3 / 5 sentences), `build_re_data` uses Punkt instead
(`stages.restorable.sentences`), which knows "Mr." and "U.S." from its training text.
"""

from __future__ import annotations

import re

# a match ends a sentence (closing quotes stay with it); the next one starts after it
SENTENCE_END = re.compile(r"[.!?][\"')\]’”]*(?=\s+[A-Z0-9\"'(“‘])|[。！？][”’」』）]*")


def normalise(text: str) -> str:
    """Collapse whitespace runs to one space and strip."""
    return " ".join(text.split())


def split_sentences(text: str) -> list[str]:
    """Sentences of ``text`` in order; [] for text with no visible characters."""
    text = normalise(text)
    if not text:
        return []
    out, start = [], 0
    for m in SENTENCE_END.finditer(text):
        out.append(text[start : m.end()].strip())
        start = m.end()
    out.append(text[start:].strip())
    return [s for s in out if s]
