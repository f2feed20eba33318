"""Config section of the ``corpus_stats`` stage (``data.corpus_stats``)."""

from __future__ import annotations

from dataclasses import dataclass

from stages.config.validate import spec


@dataclass
class CorpusStatsData:
    source: str = spec(
        "gensim_lee",
        help="Offline corpus to describe (see `python -m stages.sources list`).",
        choices=("gensim_lee", "gensim_wiki"),
    )
    max_docs: int = spec(0, help="Use at most this many documents (0 = all).", ge=0)
    top_words: int = spec(20, help="How many most frequent words to report.", ge=1)
