"""Restoration examples (RE §4.1): windows of k consecutive sentences, sampled with a seed.

The RE study restores texts of 1, 3 and 5 sentences. A document's sentences are cut into
consecutive, non-overlapping windows of k; a tail shorter than k is dropped (it is not a
k-sentence text), and so is a window of more than ``max_words`` whitespace words when
that cap is on. Every choice is counted so the stage can report what was left out.

Which examples are kept, and their order on disk, come from :class:`SeededSample`, in
memory bounded by the cap (or a shuffle buffer) rather than by the corpus: C4
RealNewsLike's train split (13M articles) is never held at once.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

Example = dict[str, Any]  # {"id": "<doc>:<first sentence>", "text": str, "sentences": [str]}

# uncapped splits are mixed through a buffer of this many examples: the order is then
# random within about this distance (a whole offline corpus fits; C4 is mixed locally
# on top of its shards' own order)
SHUFFLE_BUFFER = 200_000


def windows(sentences: Sequence[str], k: int) -> tuple[list[tuple[int, list[str]]], bool]:
    """The non-overlapping windows of ``k`` consecutive ``sentences`` as (index of the
    first sentence, sentences), and whether a tail shorter than ``k`` was dropped."""
    if k < 1:
        raise ValueError(f"window of {k} sentences: the sentence count must be >= 1")
    n = len(sentences) - len(sentences) % k
    return [(i, list(sentences[i : i + k])) for i in range(0, n, k)], n < len(sentences)


def example(doc: str, start: int, window: Sequence[str]) -> Example:
    """The record of ``window`` (sentences ``start``... of document ``doc``)."""
    return {"id": f"{doc}:{start}", "text": " ".join(window), "sentences": list(window)}


def document_of(example_id: str) -> str:
    """The document an example was cut from (its id is ``<document>:<first sentence>``,
    `example`): the independent unit of the texts of one document, which are windows of it."""
    document, sep, start = example_id.rpartition(":")
    if not sep or not document or not start.isdigit():
        raise ValueError(f"restoration example id {example_id!r} is not '<document>:<first sentence>'")
    return document


def word_count(text: str) -> int:
    """Whitespace words: the unit of ``max_words`` and of the reported mean length."""
    return len(text.split())


@dataclass
class WindowCounts:
    """What happened to the windows of one sentence count, over both splits."""

    dropped_long: int = 0  # windows over max_words
    dropped_tail: int = 0  # document tails shorter than the count


def cut(doc: str, sentences: Sequence[str], k: int, max_words: int, counts: WindowCounts) -> list[Example]:
    """The examples of ``k`` sentences of one document, windows over ``max_words`` words
    (0 = no cap) left out; both kinds of drop are added to ``counts``."""
    found, tail = windows(sentences, k)
    counts.dropped_tail += tail
    out = []
    for start, window in found:
        ex = example(doc, start, window)
        if max_words and word_count(ex["text"]) > max_words:
            counts.dropped_long += 1
            continue
        out.append(ex)
    return out


class SeededSample:
    """The examples of one split and sentence count, handed to ``sink`` in a random order
    fixed by ``seed`` (any string: the stage names the data seed, split and count).

    ``cap`` > 0: a uniform sample of ``cap`` examples of all those added (reservoir
    sampling, so a capped set is a sample of the whole corpus, not its first documents),
    emitted in shuffled order by :meth:`finish`. ``cap`` = 0: every example, mixed
    through a buffer of ``buffer`` examples and emitted as the buffer overflows.
    """

    def __init__(self, cap: int, seed: str, sink: Callable[[Example], None], buffer: int = SHUFFLE_BUFFER):
        if cap < 0 or buffer < 1:
            raise ValueError(f"SeededSample: cap={cap} must be >= 0 and buffer={buffer} >= 1")
        self.cap, self.sink = cap, sink
        self.size = cap or buffer
        self.rng = random.Random(seed)  # str seeds hash with sha512: the same in every process
        self.held: list[Example] = []
        self.seen = 0

    def add(self, ex: Example) -> None:
        self.seen += 1
        if len(self.held) < self.size:
            self.held.append(ex)
            return
        j = self.rng.randrange(self.seen if self.cap else self.size)
        if self.cap:
            if j < self.size:  # algorithm R: the i-th example stays with probability cap / i
                self.held[j] = ex
        else:
            self.sink(self.held[j])
            self.held[j] = ex

    def finish(self) -> None:
        """Emit what is held, shuffled."""
        self.rng.shuffle(self.held)
        for ex in self.held:
            self.sink(ex)
        self.held = []
