"""Punkt sentence splitting (Kiss & Strunk, 2006, as NLTK implements it), trained on the
corpus it splits.

RE §4.1 cuts C4 RealNewsLike into sentences with NLTK's sentence tokenizer, i.e. Punkt
with NLTK's pretrained English parameters. Those parameters are data (``nltk_data``),
not part of the package, and nothing is downloaded at run time; Punkt is unsupervised,
so `train_punkt` learns the same kinds of parameters (abbreviations such as "mr", "u.s",
"jan"; collocations; frequent sentence starters; each word's capitalisation contexts)
from the source's own training documents. The result is a pure function of those texts:
`build_re_data` trains it inside the stage, whose cache key covers the data and the
config (``data.re.sentence_splitter``, ``data.re.punkt_train_documents``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from stages.corpora.text import normalise

if TYPE_CHECKING:  # nltk is imported where Punkt runs: its import is slow (docs/performance.md),
    # and every process that loads the stage registry would pay it
    from nltk.tokenize.punkt import PunktParameters


def train_punkt(texts: Iterable[str]) -> PunktParameters:
    """Punkt's parameters learned from ``texts`` (raw, line breaks kept: a paragraph's
    first word is a known sentence start), NLTK's trainer with its default settings."""
    from nltk.tokenize.punkt import PunktTrainer

    trainer = PunktTrainer()
    for text in texts:
        trainer.train(text, finalize=False)
    trainer.finalize_training()
    return trainer.get_params()


class PunktSplitter:
    """``splitter(text)``: the sentences of ``text`` by Punkt with ``params``, each with its
    whitespace collapsed (`stages.corpora.text.normalise`); [] for text with nothing visible."""

    def __init__(self, params: PunktParameters):
        from nltk.tokenize.punkt import PunktSentenceTokenizer

        self.params = params
        self._tokenizer = PunktSentenceTokenizer(params)

    def __call__(self, text: str) -> list[str]:
        return [s for s in map(normalise, self._tokenizer.tokenize(text)) if s]

    def summary(self) -> dict[str, Any]:
        """What was learned, for the artifact (sorted, so equal parameters write equal files)."""
        return {"abbreviations": sorted(self.params.abbrev_types),
                "collocations": sorted(" ".join(c) for c in self.params.collocations),
                "sentence_starters": sorted(self.params.sent_starters)}
