"""The competence floors of ``eval_re_restoration`` (`stages.common.floors`), on the very texts
and target tokens it scores, one set per sentence count (each count has its own texts):

- ROUGE-1 / 2 / L: the best constant output's mean ROUGE (one of the texts, restored for every
  embedding; `stages.evaluation.task_floors.constant_rouge_floors`): a decoder that does no
  better does not restore the text it was given;
- PPL: an interpolated Kneser-Ney trigram LM (`stages.common.ngram`) fitted on the restoration
  train split of the same sentence count (its first `NGRAM_TRAIN_TEXTS` texts), tokenised and
  truncated as the systems' targets, its perplexity on the same target tokens: a decoder whose
  perplexity given the embedding is no lower than a trigram model's without it gets nothing
  from the embedding a count model would not.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from stages.common.floors import Floor
from stages.common.ngram import KneserNeyTrigram
from stages.evaluation.task_floors import constant_rouge_floors
from stages.restorable.artifacts import restoration_floor_key
from stages.restorable.restoration import target_ids

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase

    from stages.restorable.artifacts import RestorationTexts

# train texts the trigram floor is fitted on: all of profile tiny's and small's 3,000; in profile=paper
# (every window of C4 RealNewsLike's train split, hundreds of millions) a sample of the size that
# tokenises and fits in well under a minute per sentence count (3-15M tokens)
NGRAM_TRAIN_TEXTS = 100_000


def ngram_floor(texts: RestorationTexts, sentences: int, targets: list[list[int]],
                tokenizer: PreTrainedTokenizerBase, limit: int) -> Floor:
    """The perplexity on ``targets`` (the scored texts' target ids) of a Kneser-Ney trigram LM fitted
    on the first `NGRAM_TRAIN_TEXTS` train texts of ``sentences`` sentences, as
    `restoration.target_ids` encodes them (``tokenizer``, truncated at ``limit`` tokens)."""
    train = target_ids(tokenizer, texts.texts(sentences, "train", NGRAM_TRAIN_TEXTS), limit)
    model = KneserNeyTrigram.fit(train, len(tokenizer))
    nll = sum(float(model.token_nll(t).sum()) for t in targets)
    tokens = sum(len(t) for t in targets)
    if not tokens:
        raise ValueError(f"eval_re_restoration: the {sentences}-sentence texts have no target token to score")
    return Floor(math.exp(nll / tokens), False,
                 f"Kneser-Ney trigram LM of {len(train)} train texts ({sum(map(len, train))} tokens), on the "
                 "same target tokens")


class RestorationFloors:
    """The floors of every sentence count the systems are scored on (`EvalTable.floors`, keyed by
    `restoration_floor_key`): computed once per count, with the first system's tokenizer and
    truncation (the grid shares its base model's); should a later system of that count tokenise its
    texts otherwise, the count's PPL floor is dropped (a floor is on the same tokens or is none)
    and `notes` says so."""

    def __init__(self, texts: RestorationTexts):
        self.texts = texts
        self.floors: dict[str, Floor] = {}
        self.notes: list[str] = []
        self._targets: dict[int, list[list[int]]] = {}  # per count, the target ids its PPL floor scored

    def add(self, sentences: int, scored: list[str], tokenizer: PreTrainedTokenizerBase, limit: int) -> None:
        """A system restoring ``scored`` (the dev texts of ``sentences`` sentences) with ``tokenizer``
        truncating at ``limit`` tokens."""
        ppl = restoration_floor_key(sentences, "ppl")
        targets = target_ids(tokenizer, scored, limit)
        if sentences not in self._targets:
            self._targets[sentences] = targets
            found = {**constant_rouge_floors(scored), "ppl": ngram_floor(self.texts, sentences, targets, tokenizer,
                                                                         limit)}
            self.floors |= {restoration_floor_key(sentences, m): f for m, f in found.items()}
        elif ppl in self.floors and targets != self._targets[sentences]:
            del self.floors[ppl]
            self.notes.append(f"the {sentences}-sentence systems tokenise their texts differently: no PPL floor")
