"""Uninformative ("degenerate") systems: results that say nothing about the method.

A number measured on a system whose outputs ignore their input (the same text for every
document, "Cur Cur Cur ...", an empty answer) or that models text worse than word
frequencies do, is not a result: every evaluation checks its systems with these rules,
records the reason beside the system's numbers, logs it, and the report shows the flag
and never calls a finding "shown" on such a cell. Each rule returns the reason (a short
sentence) or None:

- `constant_outputs`: the most common output is the output of more than half of the
  inputs (`CONSTANT_SHARE`), or there are at most `MAX_DISTINCT` distinct outputs; needs
  at least `MIN_OUTPUTS` inputs (fewer cannot tell a constant from chance). Outputs are
  compared after collapsing whitespace; any hashable output works (a ranking, a passage id).
- `loops_or_empty`: more than half of the generations (`LOOP_SHARE`) are empty or
  repetition loops (`is_loop`: one n-gram of at most `MAX_NGRAM` tokens repeated back to
  back at least `MIN_REPEATS` times, covering at least `LOOP_COVER` of the generation).
- `above_unigram`: a perplexity above that of a unigram model of the training data on the
  same tokens (`UnigramModel`: add-one smoothed token frequencies), i.e. worse than
  ignoring the context altogether.
- `zero_with_zero_baseline`: 0 of n correct where the no-document baseline also scores 0
  of n: the task, as set up, measures nothing (the baseline's own row gets the flag too).

`combine` joins the reasons of one system; `flag_line` is the log line of one flagged system.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

CONSTANT_SHARE = 0.5  # the most common output covers more than this share of the inputs
MAX_DISTINCT = 2  # ... or there are at most this many distinct outputs
MIN_OUTPUTS = 3  # fewer inputs cannot tell a constant system from chance
LOOP_SHARE = 0.5  # more than this share of generations are loops or empty
MAX_NGRAM = 8  # longest repeated unit (tokens) a loop is made of
MIN_REPEATS = 3  # a unit repeated at least this many times back to back ...
LOOP_COVER = 0.5  # ... covering at least this share of the generation's tokens
MIN_CHAR_TOKENS = 8  # a text without spaces is read character by character from this length (e.g. Chinese)
LABEL = "uninformative"  # the word the report and the logs use


def _normal(output: Hashable) -> Hashable:
    return " ".join(output.split()) if isinstance(output, str) else output


def _show(output: Hashable, width: int = 40) -> str:
    text = repr(output)
    return text if len(text) <= width else text[: width - 3] + "..."


def constant_outputs(outputs: Sequence[Hashable]) -> str | None:
    """The reason ``outputs`` (one per input) are (nearly) constant, or None."""
    n = len(outputs)
    if n < MIN_OUTPUTS:
        return None
    counts = Counter(_normal(o) for o in outputs)
    top, count = counts.most_common(1)[0]
    if count > CONSTANT_SHARE * n:
        return f"constant output: {_show(top)} for {count} of {n} inputs"
    if len(counts) <= MAX_DISTINCT:
        return f"{len(counts)} distinct outputs for {n} inputs"
    return None


def tokens(text: str) -> list[str]:
    """Whitespace tokens of ``text``; characters for a long text without spaces."""
    words = text.split()
    return list("".join(words)) if len(words) == 1 and len(words[0]) >= MIN_CHAR_TOKENS else words


def is_loop(text: str) -> bool:
    """Whether ``text`` is mostly one n-gram repeated back to back (`is_loop`'s thresholds)."""
    seq = tokens(text)
    for n in range(1, min(MAX_NGRAM, len(seq) // MIN_REPEATS) + 1):
        run = 0  # consecutive positions i with seq[i] == seq[i + n]
        for i in range(len(seq) - n):
            run = run + 1 if seq[i] == seq[i + n] else 0
            covered = run + n  # tokens of the repeated block ending at i + n
            if covered >= MIN_REPEATS * n and covered >= LOOP_COVER * len(seq):
                return True
    return False


def loops_or_empty(generations: Sequence[str]) -> str | None:
    """The reason most ``generations`` are empty or repetition loops, or None."""
    if not generations:
        return None
    empty = sum(not g.strip() for g in generations)
    loops = [g for g in generations if g.strip() and is_loop(g)]
    if empty + len(loops) <= LOOP_SHARE * len(generations):
        return None
    parts = [f"{empty} empty"] if empty else []
    parts += [f"{len(loops)} repetition loops (e.g. {_show(loops[0])})"] if loops else []
    return f"{' and '.join(parts)} of {len(generations)} generations"


def generation_flags(generations: Sequence[str]) -> str | None:
    """The reasons a system's generated texts are uninformative (constant, loops, empty)."""
    return combine(loops_or_empty(generations), constant_outputs(generations))


@dataclass(frozen=True)
class UnigramModel:
    """Token frequencies of a training set, add-one smoothed over ``vocab_size`` types:
    the perplexity a model reaches by ignoring the context."""

    counts: Any  # np.ndarray [vocab_size] int64
    total: int

    @classmethod
    def fit(cls, chunks: Iterable[Any], vocab_size: int) -> UnigramModel:
        """From token id arrays (``chunks``: any iterable of int sequences)."""
        import numpy as np

        counts = np.zeros(vocab_size, dtype=np.int64)
        for ids in chunks:
            arr = np.asarray(ids, dtype=np.int64)
            if arr.size and (arr.min() < 0 or arr.max() >= vocab_size):
                raise ValueError(f"unigram model: token id outside the vocabulary of {vocab_size} "
                                 f"(ids {int(arr.min())}..{int(arr.max())})")
            counts += np.bincount(arr, minlength=vocab_size)
        return cls(counts, int(counts.sum()))

    def token_nll(self, ids: Any) -> Any:
        """The NLL (nats) of each token of ``ids`` (np.ndarray [len(ids)])."""
        import numpy as np

        arr = np.asarray(ids, dtype=np.int64)
        return -np.log((self.counts[arr] + 1) / (self.total + len(self.counts)))

    def nll(self, ids: Any) -> float:
        """Summed NLL (nats) of the tokens ``ids``."""
        return float(self.token_nll(ids).sum())


def above_unigram(ppl: float | None, unigram_ppl: float | None, what: str = "perplexity") -> str | None:
    """The reason a ``ppl`` above the unigram model's on the same tokens is uninformative, or None."""
    if ppl is None or unigram_ppl is None or not (math.isfinite(ppl) and math.isfinite(unigram_ppl)):
        return None
    return f"{what} {ppl:.4g} above a unigram model of its training data ({unigram_ppl:.4g})" \
        if ppl > unigram_ppl else None


def zero_with_zero_baseline(correct: int, n: int, baseline_correct: int | None, baseline: str) -> str | None:
    """The reason 0 of ``n`` correct is uninformative when ``baseline`` (no document) also got 0, or None."""
    if n and correct == 0 and baseline_correct == 0:
        return f"0 of {n} correct, as {baseline} (the task measures nothing here)"
    return None


def combine(*reasons: str | None) -> str | None:
    """The reasons of one system, joined ("; "), or None when no rule fired."""
    found = [r for r in reasons if r]
    return "; ".join(found) if found else None


def flag_line(stage: str, system: str, reason: str) -> str:
    """The log line of one flagged system."""
    return f"[{stage}] {LABEL}: {system}: {reason}"
