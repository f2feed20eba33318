"""Subword and word-level perplexity from per-token NLLs (Nugget2D §5.2).

Word-level perplexity multiplies the probabilities of the subwords of each complete
word, i.e. it divides the same total NLL by the number of words instead of subwords:
equal to subword perplexity when every word is one subword, larger when words split.

Words are read off the tokens' surface text (`token_texts`: what each token adds to the
decoded text, so the tokenizer's own decoder turns SentencePiece's ``▁`` and byte-level
BPE's ``Ġ`` into the leading space; decoding a token alone would drop SentencePiece's,
which made a whole segment one "word") with the convention of `stages.common.words`: a
word is a maximal run of non-whitespace characters, a token of whitespace only belongs
to the word that follows it, and control tokens (BOS, EOS: `word_texts`) to none.
Only whole words in the evaluated region count: a word with a character before ``start``
(its beginning was context, not predicted: a word truly cut by the window) is left out of
the word count and of the word NLL, so a sequence's first word counts only when a BOS
precedes it. A word whose only context-side piece is whitespace (the ``" \n"`` that ends
the previous line, SmolLM2's lone space before a number: tokens that belong to the word
after them) has every character predicted and counts, as lm-evaluation-harness counts every
word of the text it scores (``len(re.split(r"\s+", text))``). Words
equal to the corpus's out-of-vocabulary marker (WikiText's ``<unk>``), with the
whitespace before them, are excluded from both perplexities (Merity et al., 2016
convention).

A corpus perplexity is no mean of per-segment values: its 95% interval is the bootstrap one over
the independent units summed (articles, not the segments cut from them: `perplexity_units`,
`stages.common.resampling`).
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from stages.common.resampling import UnitSample
from stages.common.words import NO_WORD, token_words, word_spans
from stages.evaluation.decoding import decode_ids

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase


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

    @classmethod
    def total(cls, units: Sequence[PerplexityCounts]) -> PerplexityCounts:
        """The sums over ``units`` (segments, articles)."""
        out = cls()
        for unit in units:
            out.add(unit)
        return out

    @property
    def subword_ppl(self) -> float:
        return math.exp(self.subword_nll / self.subwords) if self.subwords else math.nan

    @property
    def word_ppl(self) -> float:
        return math.exp(self.word_nll / self.words) if self.words else math.nan


def token_texts(tokenizer: PreTrainedTokenizerBase, ids: Sequence[int]) -> list[str]:
    """The text each of ``ids`` adds to the decoded sequence (leading spaces included).

    Decodes every prefix, so the tokenizer's decoder handles word-start markers and
    multi-token characters; O(n^2) token decodes, a fraction of a second for a 640-token
    segment, negligible beside the LM passes that score it.
    """
    texts, previous = [], ""
    for i in range(len(ids)):
        current = decode_ids(tokenizer, ids[: i + 1], skip_special_tokens=False, clean_up_tokenization_spaces=False)
        shared = len(os.path.commonprefix([previous, current]))  # a partial UTF-8 char may change
        texts.append(current[shared:])
        previous = current
    return texts


def word_texts(tokenizer: PreTrainedTokenizerBase, ids: Sequence[int]) -> list[str | None]:
    """`token_texts` with None for the control tokens: a BOS, EOS or padding token is no
    part of any word. Control tokens are the tokenizer's special tokens other than its
    unknown token (it stands for a piece of the text: LLaMA's ``<unk>`` is how WikiText's
    OOV marker tokenises), unless that one is also the BOS, EOS or padding token."""
    control = set(tokenizer.all_special_ids)
    if tokenizer.unk_token_id not in {tokenizer.bos_token_id, tokenizer.eos_token_id, tokenizer.pad_token_id}:
        control.discard(tokenizer.unk_token_id)
    return [None if t in control else text for t, text in zip(ids, token_texts(tokenizer, ids), strict=True)]


def word_ids(token_texts: Sequence[str | None]) -> list[int]:
    """Index of the word each token belongs to, `NO_WORD` for a control token (None)
    (`stages.common.words.token_words` over the concatenated texts)."""
    spans: list[tuple[int, int] | None] = []
    end = 0
    for text in token_texts:
        spans.append(None if text is None else (end, end + len(text)))
        end += len(text or "")
    return token_words("".join(t for t in token_texts if t is not None), spans)


def segment_counts(
    nll: Sequence[float], token_texts: Sequence[str | None], start: int, oov_token: str = ""
) -> PerplexityCounts:
    """Counts for one segment.

    Args:
        nll: NLL of predicting tokens ``start .. start + len(nll) - 1``.
        token_texts: surface text of every token of the segment (context included; None
            for a control token, `word_texts`). A predicted token in no word counts as a
            subword only.
        start: index of the first predicted token (>= 1). A word counts (words, word NLL)
            when none of its characters lies before it (whitespace before the word may).
        oov_token: the corpus's OOV marker ("" = the corpus marks none).
    """
    if start < 1 or start + len(nll) > len(token_texts):
        raise ValueError(f"nll of {len(nll)} tokens from {start} does not fit {len(token_texts)} tokens")
    words = word_ids(token_texts)
    text = "".join(t for t in token_texts if t is not None)
    # the first character of the predicted region; a word beginning at or after it is whole
    first_char = sum(len(t or "") for t in token_texts[:start])
    word_starts = [a for a, _ in word_spans(text)]
    spans: dict[int, list[int]] = {}
    for i, w in enumerate(words):
        spans.setdefault(w, []).append(i)
    counts = PerplexityCounts()
    for w, span in spans.items():
        predicted = [i for i in span if i >= start]
        if not predicted:
            continue
        text = "".join(token_texts[i] or "" for i in span).strip()
        if w != NO_WORD and oov_token and text == oov_token:
            counts.oov_words += 1
            continue
        total = sum(float(nll[i - start]) for i in predicted)
        counts.subword_nll += total
        counts.subwords += len(predicted)
        if w != NO_WORD and word_starts[w] >= first_char:  # a whole word: no character of it is context
            counts.word_nll += total
            counts.words += 1
    return counts


def perplexity_units(units: Sequence[PerplexityCounts], ids: Sequence[str], unit: str
                     ) -> dict[str, UnitSample]:
    """The subword (``subword_ppl``) and word (``word_ppl``) perplexity of ``units`` as
    `UnitSample` s (``[NLL sum, count]`` per unit, statistic ``exp_ratio``): ``ids[i]`` names the
    independent unit (``unit``: "document", "article") ``units[i]`` belongs to, and counts of one id
    are summed into one unit (the segments of one article are one unit), so the intervals and a
    paired comparison of two systems resample what is independent."""
    if len(units) != len(ids):
        raise ValueError(f"perplexity_units: {len(units)} counts for {len(ids)} unit ids")
    return {"subword_ppl": UnitSample.of(unit, "exp_ratio", ids, [[u.subword_nll, u.subwords] for u in units]),
            "word_ppl": UnitSample.of(unit, "exp_ratio", ids, [[u.word_nll, u.words] for u in units])}
