"""PI / RR document similarity (Nugget §6.1): rank each task's candidates for its query.

Multi-vector systems score a (query, candidate) pair with mean-MaxSim (eq. 10);
single-vector systems with cosine. The result is MRR x 100 over the tasks, resampled by query
(`query_units`), beside a random ranking's (`mrr_floor`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from stages.common.floors import Floor, random_mrr
from stages.common.resampling import UnitSample
from stages.corpora.nugget_data import Task, read_docs, read_tasks
from stages.evaluation.metrics import cosine, mean_maxsim, reciprocal_rank
from stages.evaluation.samples import Sample

if TYPE_CHECKING:
    from stages.nugget.encoders import LoadedSystem


def read_similarity_data(folder: Path) -> tuple[list[Task], dict[str, str]]:
    """Tasks + documents of ``folder``: our builders' ``tasks.jsonl`` + ``docs.tsv``, or
    the authors' released ``task.jsonl`` + ``docs.txt`` (github.com/hiaoxui/nugget-data)."""
    for tasks_name, docs_name in (("tasks.jsonl", "docs.tsv"), ("task.jsonl", "docs.txt")):
        if (folder / tasks_name).exists() and (folder / docs_name).exists():
            return read_tasks(folder / tasks_name), read_docs(folder / docs_name)
    raise FileNotFoundError(f"{folder} has neither tasks.jsonl+docs.tsv nor task.jsonl+docs.txt")


def needed_docs(tasks: list[Task]) -> list[str]:
    """Ids of every query and candidate, each once, in first-use order."""
    return list(dict.fromkeys(i for t in tasks for i in (t.query, *t.candidates)))


def task_vectors(loaded: LoadedSystem, tasks: list[Task], docs: dict[str, str], batch_size: int
                 ) -> dict[str, torch.Tensor]:
    """The vectors of every query and candidate of ``tasks`` under ``loaded`` (each document
    encoded once): eval_similarity's encoding step (also ``nugget eval --task pi / rr``'s)."""
    ids = needed_docs(tasks)
    return dict(zip(ids, loaded.vectors([docs[i] for i in ids], batch_size), strict=True))


def score_tasks(vectors: dict[str, torch.Tensor], tasks: list[Task], multi: bool) -> list[tuple[list[float], int]]:
    """Candidate scores of each task: mean-MaxSim (``multi``) or cosine of single vectors."""
    rankings = []
    for t in tasks:
        q = vectors[t.query]
        if multi:
            scores = [mean_maxsim(q, vectors[c]) for c in t.candidates]
        else:
            scores = cosine(q[0], torch.stack([vectors[c][0] for c in t.candidates])).tolist()
        rankings.append((scores, t.answer))
    return rankings


def task_reciprocal_ranks(vectors: dict[str, torch.Tensor], tasks: list[Task], multi: bool
                          ) -> tuple[list[float], list[tuple[int, ...]]]:
    """Reciprocal rank x 100 of each task's answer (their mean is the MRR; per task, so
    the evaluation can publish them and the MRR's standard error), and each task's ranking
    (candidate indices by descending score, ties in candidate order): a system whose
    rankings are (nearly) all the same ignores its input (`stages.common.degenerate`)."""
    scored = score_tasks(vectors, tasks, multi)
    return [100.0 * reciprocal_rank(s, a) for s, a in scored], [ranking(s) for s, _ in scored]


def mrr_floor(tasks: list[Task]) -> Floor:
    """The MRR (x 100) of a random ranking of each task's candidates: `random_mrr` of each task's
    candidate count, their mean over the tasks (tasks may rank different numbers of candidates)."""
    sizes = [len(t.candidates) for t in tasks]
    what = f"{sizes[0]}" if len(set(sizes)) == 1 else f"{min(sizes)}-{max(sizes)}"
    return Floor(sum(map(random_mrr, sizes)) / len(sizes), True,
                 f"a random ranking of each query's {what} candidates (expected MRR)")


QUERY = "query document"  # the MRR's unit: a task's query (PI: a document; RR: an article's lead section)


def query_units(tasks: list[Task], reciprocal_ranks: list[float]) -> UnitSample:
    """The MRR's sample: per query (unit id: the query's document id) its reciprocal rank x 100."""
    return UnitSample.of(QUERY, "ratio", [t.query for t in tasks], [[rr, 1.0] for rr in reciprocal_ranks])


def ranking(scores: list[float]) -> tuple[int, ...]:
    """Candidate indices by descending score, ties in candidate order (``sorted`` is stable)."""
    return tuple(sorted(range(len(scores)), key=lambda i: -scores[i]))


TOP_TEXTS = 5  # candidates whose text a sample row carries (in ranked order)
RANKING_KEPT = 100  # candidate ids a sample row's ranking keeps (a PI task ranks ~1000)


def ranking_samples(system: str, settings: Mapping[str, Any], tasks: Sequence[Task], docs: Mapping[str, str],
                    reciprocal_ranks: Sequence[float], rankings: Sequence[tuple[int, ...]]) -> list[dict[str, Any]]:
    """One sample row (`stages.evaluation.samples`) per task: the ``query`` text, how many
    ``candidates`` the system ranked and the text of its `TOP_TEXTS` best (``top``: id and
    text), the answer's text as the target, the top hit's text as the output; metrics: the
    answer's id, its 1-based ``rank`` (ties counted against it, as its
    ``reciprocal_rank_x100``), the ``top_hit`` id and the ``ranking``'s first `RANKING_KEPT`
    candidate ids (ties in candidate order): rows stay small although a PI task ranks many
    candidates (docs/architecture.md, "Per-sample records"); the texts are in the build_pi /
    build_rr dataset the ids name."""
    rows = []
    for t, rr, order in zip(tasks, reciprocal_ranks, rankings, strict=True):
        ranked = [t.candidates[i] for i in order]
        rows.append(Sample(t.query, system, {"query": docs[t.query], "candidates": len(t.candidates),
                                              "top": [{"id": c, "text": docs[c]} for c in ranked[:TOP_TEXTS]]},
                           docs[t.candidates[t.answer]], docs[ranked[0]],
                           {"answer": t.candidates[t.answer], "rank": round(100 / rr),
                            "reciprocal_rank_x100": rr, "top_hit": ranked[0], "ranking": ranked[:RANKING_KEPT]},
                           dict(settings), generated=False).row())
    return rows


def metric_name(*parts: str) -> str:
    """An MLflow-safe metric key (letters, digits, ``_ - . /`` and spaces only)."""
    return ".".join(re.sub(r"[^A-Za-z0-9_.\-/ ]", "_", p) for p in parts)
