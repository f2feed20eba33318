"""Nugget §5.2-5.3 analyses: which tokens become nuggets, and what each nugget encodes.

- `token_statistics`: counts of nugget tokens vs all tokens (fig. 5);
- `probability_gain`: teacher-forced decoding exposing one nugget at a time (eq. 9).
  The unconditional term ``p(y_i | y_<i)`` needs a decoder that sees no nugget; a
  cross-attention over zero keys is undefined, so it reads one all-zero vector with
  score 0 instead (no information about the document).
"""

from __future__ import annotations

import string
from collections import Counter
from dataclasses import dataclass, field

import torch

from nugget_core import Nuggets
from stages.common.tokens import display_token

PUNCTUATION = set(string.punctuation) | set("。，、！？；：")


def is_punctuation(token: str) -> bool:
    """Whether ``token`` (raw, e.g. 'Ġ,', or as `display_token` shows it) is punctuation only."""
    text = display_token(token)
    return bool(text) and all(ch in PUNCTUATION for ch in text)


@dataclass
class TokenStats:
    nuggets: Counter[str] = field(default_factory=Counter)
    text: Counter[str] = field(default_factory=Counter)
    positions: list[tuple[int, ...]] = field(default_factory=list)  # per document: its nuggets' token indices

    def add(self, tokens: list[str], selected: list[bool]) -> None:
        self.text.update(tokens)
        self.nuggets.update(t for t, s in zip(tokens, selected, strict=True) if s)
        self.positions.append(tuple(i for i, s in enumerate(selected) if s))

    def share(self, counter: Counter[str], token: str) -> float:
        return 100.0 * counter[token] / max(sum(counter.values()), 1)

    def word_share(self, counter: Counter[str], word: str) -> float:
        """Share of tokens spelling ``word``, bare or with a word-start marker: byte-level
        BPE's 'Ġ' or SentencePiece's '▁' (mBART-50)."""
        hits = counter[word] + counter["Ġ" + word] + counter["▁" + word]
        return 100.0 * hits / max(sum(counter.values()), 1)

    def punctuation_share(self, counter: Counter[str]) -> float:
        return 100.0 * sum(c for t, c in counter.items() if is_punctuation(t)) / max(sum(counter.values()), 1)


def single_nugget(nuggets: Nuggets, j: int | None) -> Nuggets:
    """Nuggets of a one-document batch reduced to nugget ``j`` (None: one zero vector)."""
    if j is None:
        zeros = torch.zeros_like(nuggets.encoding[:, :1])
        return Nuggets(zeros, torch.ones_like(nuggets.mask[:, :1]), torch.zeros_like(nuggets.scores[:, :1]),
                       torch.zeros_like(nuggets.indices[:, :1]))
    return Nuggets(nuggets.encoding[:, j : j + 1], nuggets.mask[:, j : j + 1], nuggets.scores[:, j : j + 1],
                   nuggets.indices[:, j : j + 1])


@torch.no_grad()
def probability_gain(model, input_ids: torch.Tensor) -> tuple[torch.Tensor, list[int]]:
    """Eq. (9) for one document ``input_ids [1, n]`` (AE: the labels are the input, a
    multilingual tokenizer's language code included, which the caller checks is the code
    the model was trained to write: `stages.common.languages.check_writes_its_input`).

    Returns ``gains [k, n]`` (row j: ``p(y_i | y_<i, z_j) - p(y_i | y_<i)``) and the
    input position of each nugget.
    """
    nuggets = model.encode(input_ids, torch.ones_like(input_ids))

    def token_probs(n: Nuggets) -> torch.Tensor:
        logits = model(input_ids=input_ids, labels=input_ids, nuggets=n).logits
        return logits.softmax(-1).gather(-1, input_ids[..., None])[0, :, 0]

    base = token_probs(single_nugget(nuggets, None))
    k = int(nuggets.mask.sum())
    gains = torch.stack([token_probs(single_nugget(nuggets, j)) - base for j in range(k)])
    return gains, nuggets.indices[0, :k].tolist()
