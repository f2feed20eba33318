"""The offline stand-in for TREC in RE table 10 (`stages.restorable.downstream_data.Task`):
sentences of the offline corpora labelled by where they come from, at TREC's two granularities.

- ``trec_coarse``: which source a sentence comes from (``data.re_downstream.stand_in_sources``:
  Wikipedia, the Python documentation, Lee's news articles, ...).
- ``trec_fine``: which group of its source's documents (``stand_in_groups`` runs of consecutive
  documents in the source's reading order, so a group is a stretch of related articles or pages):
  ``<source>:g<k>``.

Per fine class, at most ``stand_in_sentences`` sentences (the rule-based splitter,
`stages.corpora.corpora.english_streams`; sentences of fewer than 4 words are left out: headings
and list items), a seeded sample; a seeded ``stand_in_test_fraction`` of them is test. No dev
split: the probe's L2 is picked by cross-validation on train, as for TREC.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import TYPE_CHECKING

from stages.corpora.corpora import english_streams
from stages.restorable.downstream_data import Example, Task, held_out

if TYPE_CHECKING:
    from stages.restorable.config import REDownstreamData

MIN_WORDS = 4  # a shorter "sentence" of these corpora is a heading, a list item or a code fragment


def labelled_sentences(cfg: REDownstreamData, sources_dir: Path, seed: int) -> list[tuple[str, str, str]]:
    """(sentence, coarse label, fine label): a seeded sample of at most ``stand_in_sentences`` per fine class."""
    out = []
    for source in cfg.stand_in_sources:
        docs = english_streams(source, sources_dir)
        if len(docs) < cfg.stand_in_groups:
            raise ValueError(f"data.re_downstream.stand_in_groups={cfg.stand_in_groups}: source {source!r} has only "
                             f"{len(docs)} documents")
        groups: list[list[str]] = [[] for _ in range(cfg.stand_in_groups)]
        for i, doc in enumerate(docs):
            groups[i * cfg.stand_in_groups // len(docs)] += [s for s in doc if len(s.split()) >= MIN_WORDS]
        for k, sentences in enumerate(groups):
            rng = random.Random(f"re_downstream:{seed}:{source}:{k}")
            picked = rng.sample(sentences, min(cfg.stand_in_sentences, len(sentences)))
            out += [(s, source, f"{source}:g{k}") for s in picked]
    return out


def stand_in_tasks(cfg: REDownstreamData, sources_dir: Path, seed: int) -> dict[str, Task]:
    """``trec_coarse`` and ``trec_fine`` of the stand-in (module docstring), the same sentences in each."""
    rows = labelled_sentences(cfg, sources_dir, seed)
    test = [held_out(f"stand_in:{text}", seed, cfg.stand_in_test_fraction) for text, _, _ in rows]
    origin = (f"stand-in: sentences of {', '.join(cfg.stand_in_sources)} labelled by source (coarse) and by group of "
              f"{cfg.stand_in_groups} runs of documents per source (fine)")
    out = {}
    for task, column in (("trec_coarse", 1), ("trec_fine", 2)):
        splits: dict[str, list[Example]] = {"train": [], "test": []}
        for row, is_test in zip(rows, test, strict=True):
            splits["test" if is_test else "train"].append((row[0], row[column]))
        out[task] = Task(splits, sorted({r[column] for r in rows}), "cv", origin)
    return out
