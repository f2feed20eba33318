"""What the language-modelling evaluation reads from ``build_lm``'s segments files
(``lm_<corpus>.parquet``: ``split``, ``document_id``, ``distant`` and ``recent`` token ids per
segment): the segments of a split (`read_segments`; with the document each was cut from,
`read_documents`; capped by scored tokens with `first_scored`) and each corpus's references
fitted on its train segments: the unigram model
(`unigram_models`: a perplexity above it is flagged uninformative) and the Kneser-Ney trigram
model (`trigram_models`: the competence floor), for ``eval_lm`` and ``nugget eval --task lm``."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import pyarrow.parquet as pq

from stages.common.degenerate import UnigramModel
from stages.common.ngram import KneserNeyTrigram

if TYPE_CHECKING:
    from stages.nugget2d.lm.language_modelling import Segment

DOCUMENT = "document_id"  # `stages.nugget2d.artifacts.LMRecords.DOCUMENT`
M = TypeVar("M")


def _rows(path: Path, split: str, limit: int, columns: list[str]) -> list[dict[str, Any]]:
    names = pq.read_schema(path).names
    if missing := [c for c in columns if c not in names]:
        raise ValueError(f"{path.name} has no column {missing} (columns {names}): written by an older build_lm; "
                         "rerun build_lm")
    rows = [r for r in pq.read_table(path, columns=columns).to_pylist() if r["split"] == split and r["recent"]]
    if not rows:
        raise ValueError(f"{path.name} has no segments in split {split!r}")
    return rows[:limit] if limit else rows


def read_segments(path: Path, split: str, limit: int) -> list[Segment]:
    """The first ``limit`` (0 = all) segments of ``split`` with recent tokens, as (distant, recent) ids."""
    return [(r["distant"], r["recent"]) for r in _rows(path, split, limit, ["split", "distant", "recent"])]


def across_documents(documents: Sequence[str]) -> list[int]:
    """The positions of items whose documents are ``documents`` (each document's items in text
    order), reordered so that every document's first item comes first, then every document's
    second, ...: the first k items span as many independent documents as there are."""
    rank: dict[str, int] = {}
    keyed = []
    for i, document in enumerate(documents):
        keyed.append((rank.get(document, 0), i))
        rank[document] = rank.get(document, 0) + 1
    return [i for _, i in sorted(keyed)]


def read_documents(path: Path, split: str, limit: int) -> tuple[list[Segment], list[str]]:
    """The first ``limit`` (0 = all) segments of ``split`` with recent tokens taken across the
    documents (`across_documents`), and the id of the document (article) each was cut from: the
    unit a perplexity's interval resamples (an article's segments share its topic and vocabulary)."""
    rows = _rows(path, split, 0, ["split", DOCUMENT, "distant", "recent"])
    rows = [rows[i] for i in across_documents([str(r[DOCUMENT]) for r in rows])]
    rows = rows[:limit] if limit else rows
    return [(r["distant"], r["recent"]) for r in rows], [str(r[DOCUMENT]) for r in rows]


def first_scored(segments: list[Segment], tokens: int) -> list[Segment]:
    """The first of ``segments`` whose recent (scored) tokens reach ``tokens`` (0 = all of them):
    ``eval.lm.pile_tokens``, Nugget2D §5.2's held-out Pile subset "of 100k tokens"."""
    if not tokens:
        return list(segments)
    out, scored = [], 0
    for segment in segments:
        if scored >= tokens:
            break
        out.append(segment)
        scored += len(segment[1])
    return out


def train_tokens(path: Path) -> Iterator[Any]:
    """The token ids of a segments file's train segments, NumPy arrays read batch by batch
    (a paper-scale train split is never held as Python lists)."""
    import pyarrow.compute as pc

    for batch in pq.ParquetFile(path).iter_batches(columns=["split", "distant", "recent"]):
        train = pc.equal(batch.column(0), "train")
        for column in (batch.column(1), batch.column(2)):
            yield pc.filter(column, train).flatten().to_numpy(zero_copy_only=False)


def train_segments(path: Path) -> Iterator[Any]:
    """The token ids (distant + recent, NumPy arrays) of each train segment of a segments file,
    read batch by batch: the sequences an n-gram model counts (no n-gram spans two segments)."""
    import numpy as np
    import pyarrow.compute as pc

    for batch in pq.ParquetFile(path).iter_batches(columns=["split", "distant", "recent"]):
        train = pc.equal(batch.column(0), "train")
        distant, recent = (pc.filter(batch.column(i), train) for i in (1, 2))
        d_ids, r_ids = (c.flatten().to_numpy(zero_copy_only=False) for c in (distant, recent))
        d_at, r_at = (c.offsets.to_numpy() - c.offsets[0].as_py() for c in (distant, recent))  # into flatten()'s
        for i in range(len(distant)):
            yield np.concatenate([d_ids[d_at[i] : d_at[i + 1]], r_ids[r_at[i] : r_at[i + 1]]])


def _per_corpus(paths: dict[str, Path], fit: Callable[[list[Path]], M], what: str, note: str
                ) -> tuple[dict[str, M], list[str]]:
    """Per corpus (``paths``: its segments file) ``fit`` of its train segments; a corpus without
    any (the paper's WikiText: build_lm writes its validation / test articles only) gets the fit of
    the corpora that have train segments, the text the LMs trained on (the Pile), and a note
    (``<corpus> has no train split: its <note> the train segments of ...``)."""
    trained = [c for c, p in paths.items() if next(train_segments(p), None) is not None]
    if not trained:
        raise ValueError(f"eval_lm: none of eval.lm.corpora {list(paths)} has train segments in build_lm's output: "
                         f"no {what}")
    own = {c: fit([paths[c]]) for c in trained}
    missing = [c for c in paths if c not in own]
    if missing:
        pooled = fit([paths[c] for c in trained])
        own |= dict.fromkeys(missing, pooled)
    return own, [f"{c} has no train split: its {note} the train segments of {', '.join(trained)}" for c in missing]


def unigram_model(path: Path, vocab_size: int) -> UnigramModel:
    """Token frequencies of the corpus's train segments (`stages.common.degenerate`): the
    context-free reference a system's perplexity on that corpus must beat (no train
    segments: an empty model, ``total`` 0)."""
    return UnigramModel.fit(train_tokens(path), vocab_size)


def unigram_models(paths: dict[str, Path], vocab_size: int) -> tuple[dict[str, UnigramModel], list[str]]:
    """Per corpus (``paths``: its segments file) the unigram reference (`unigram_model`); a corpus
    without train segments takes the others' (`_per_corpus`)."""
    return _per_corpus(paths, lambda files: UnigramModel.fit((t for f in files for t in train_tokens(f)), vocab_size),
                       "unigram reference to flag an uninformative perplexity against", "unigram reference is")


def trigram_models(paths: dict[str, Path], vocab_size: int) -> tuple[dict[str, KneserNeyTrigram], list[str]]:
    """Per corpus (``paths``: its segments file) the interpolated Kneser-Ney trigram model of its
    train segments (`stages.common.ngram`): the language-modelling competence floor, scored on the
    very tokens the systems are; a corpus without train segments takes the others' (`_per_corpus`)."""
    return _per_corpus(paths, lambda files: KneserNeyTrigram.fit((s for f in files for s in train_segments(f)),
                                                                 vocab_size),
                       "Kneser-Ney trigram floor", "Kneser-Ney trigram floor is fitted on")
