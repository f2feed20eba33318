"""What the language-modelling evaluation reads from ``build_lm``'s segments files
(``lm_<corpus>.parquet``: ``split``, ``distant`` and ``recent`` token ids per segment): the
segments of a split (`read_segments`, capped by scored tokens with `first_scored`) and each
corpus's unigram reference (`unigram_models`),
for ``eval_lm`` and ``nugget eval --task lm``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow.parquet as pq

from stages.common.degenerate import UnigramModel

if TYPE_CHECKING:
    from stages.nugget2d.lm.language_modelling import Segment


def read_segments(path: Path, split: str, limit: int) -> list[Segment]:
    """The first ``limit`` (0 = all) segments of ``split`` with recent tokens, as (distant, recent) ids."""
    rows = [r for r in pq.read_table(path, columns=["split", "distant", "recent"]).to_pylist()
            if r["split"] == split and r["recent"]]
    if not rows:
        raise ValueError(f"{path.name} has no segments in split {split!r}")
    rows = rows[:limit] if limit else rows
    return [(r["distant"], r["recent"]) for r in rows]


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


def unigram_model(path: Path, vocab_size: int) -> UnigramModel:
    """Token frequencies of the corpus's train segments (`stages.common.degenerate`): the
    context-free reference a system's perplexity on that corpus must beat (no train
    segments: an empty model, ``total`` 0)."""
    return UnigramModel.fit(train_tokens(path), vocab_size)


def unigram_models(paths: dict[str, Path], vocab_size: int) -> tuple[dict[str, UnigramModel], list[str]]:
    """Per corpus (``paths``: its segments file) the unigram reference, and a note per corpus
    that has no train split (the paper's WikiText: build_lm writes its validation / test
    articles only): its reference pools the train segments of the corpora that have one,
    the text the LMs trained on (the Pile)."""
    own = {corpus: unigram_model(path, vocab_size) for corpus, path in paths.items()}
    trained = [c for c, m in own.items() if m.total]
    if not trained:
        raise ValueError(f"eval_lm: none of eval.lm.corpora {list(paths)} has train segments in build_lm's output: "
                         "no unigram reference to flag an uninformative perplexity against")
    pooled = UnigramModel(sum(own[c].counts for c in trained), sum(own[c].total for c in trained))
    missing = [c for c in paths if not own[c].total]
    notes = [f"{c} has no train split: its unigram reference is the train segments of {', '.join(trained)}"
             for c in missing]
    return {c: own[c] if own[c].total else pooled for c in paths}, notes
