"""Nugget §5.2-5.3 analyses: which tokens become nuggets, and what each nugget encodes.

- `TokenStats`: counts of nugget tokens vs all tokens (fig. 5), in total and per document: a
  share's interval resamples the documents (`TokenStats.share_sample`), since the nugget tokens
  of one document are not independent of each other;
- `probability_gain`: teacher-forced decoding exposing one nugget at a time (eq. 9).
  The unconditional term ``p(y_i | y_<i)`` needs a decoder that sees no nugget; a
  cross-attention over zero keys is undefined, so it reads one all-zero vector with
  score 0 instead (no information about the document).
"""

from __future__ import annotations

import string
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import torch

from nugget_core import Nuggets
from stages.common.resampling import UnitSample
from stages.common.tokens import display_token

PUNCTUATION = set(string.punctuation) | set("。，、！？；：")


def is_punctuation(token: str) -> bool:
    """Whether ``token`` (raw, e.g. 'Ġ,', or as `display_token` shows it) is punctuation only."""
    text = display_token(token)
    return bool(text) and all(ch in PUNCTUATION for ch in text)


def spells(word: str) -> Callable[[str], bool]:
    """Whether a token spells ``word``, bare or with a word-start marker: byte-level BPE's 'Ġ' or
    SentencePiece's '▁' (mBART-50)."""
    forms = {word, "Ġ" + word, "▁" + word}
    return forms.__contains__


@dataclass
class TokenStats:
    nuggets: Counter[str] = field(default_factory=Counter)
    text: Counter[str] = field(default_factory=Counter)
    positions: list[tuple[int, ...]] = field(default_factory=list)  # per document: its nuggets' token indices
    # per document: its nugget tokens and its tokens, counted (what a share's interval resamples)
    documents: list[tuple[Counter[str], Counter[str]]] = field(default_factory=list)

    def add(self, tokens: list[str], selected: list[bool]) -> None:
        nuggets, text = Counter(t for t, s in zip(tokens, selected, strict=True) if s), Counter(tokens)
        self.text.update(text)
        self.nuggets.update(nuggets)
        self.positions.append(tuple(i for i, s in enumerate(selected) if s))
        self.documents.append((nuggets, text))

    def share(self, counter: Counter[str], token: str) -> float:
        return 100.0 * counter[token] / max(sum(counter.values()), 1)

    def word_share(self, counter: Counter[str], word: str) -> float:
        """Share of tokens spelling ``word`` (`spells`)."""
        hits = sum(c for t, c in counter.items() if spells(word)(t))
        return 100.0 * hits / max(sum(counter.values()), 1)

    def share_sample(self, side: str, counts: Callable[[str], bool], ids: Sequence[str]) -> UnitSample:
        """The share (%) of the tokens ``counts`` accepts among the nuggets (``side`` "nuggets") or
        among the tokens (``side`` "text") as a sample of documents (unit ids ``ids``, one per
        document added): per document [100 x its tokens accepted, its tokens] (statistic "ratio":
        the sample's value is the share of the summed counts, `share` / `word_share` / `punctuation_share`)."""
        if len(ids) != len(self.documents):
            raise ValueError(f"share_sample: {len(ids)} ids for {len(self.documents)} documents")
        index = {"nuggets": 0, "text": 1}[side]
        rows = [[100.0 * sum(c for t, c in doc[index].items() if counts(t)), float(sum(doc[index].values()))]
                for doc in self.documents]
        return UnitSample.of("document", "ratio", ids, rows)

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
