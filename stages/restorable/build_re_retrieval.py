"""Stage ``build_re_retrieval``: the passage-retrieval data of the RE study (RE §4.4).

``data.re_retrieval.source``:

- ``dpr_nq`` (profile=paper, the paper's data): Natural Questions as DPR released it —
  ``biencoder-nq-train.json`` / ``biencoder-nq-dev.json`` (question, positive and hard
  negative passages) for training, ``nq-test.qa.csv`` (question, answer strings) for
  evaluation, and ``psgs_w100.tsv`` (21,015,324 Wikipedia passages, read in place): a
  retrieved passage is a hit when it contains an answer string (DPR's rule, ``match:
  answer``). Local files (``*_file``), fetched once from DPR's release.
- ``rr_tasks`` (profile=tiny, a stand-in): the passage-reranking tasks of ``build_rr``
  (lead section -> another section of the article, BM25-mined negatives). Queries are
  split by a seeded hash of their id: ``train_fraction`` train (``dev_fraction`` of them
  dev), the rest test. Training examples take the task's answer as positive and its mined
  candidates as hard negatives; a test query retrieves from every passage any task
  offers (``passages.tsv``), and a hit is its answer passage (``match: id``).

Output: `stages.restorable.artifacts.RetrievalData`.
"""

from __future__ import annotations

import csv
import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from stages.artifacts.base import write_json
from stages.common.records import write_jsonl
from stages.framework.contract import produced_by, section
from stages.framework.stage import Stage, StageContext
from stages.nugget.artifacts.data import SimilarityDataset
from stages.restorable.artifacts import RetrievalData, passage_input

if TYPE_CHECKING:
    from stages.restorable.config import RERetrievalData


def heldout(query_id: str, seed: int, train_fraction: float) -> bool:
    """Whether a query is held out for testing: a seeded hash of its id, so the split does
    not depend on the order or number of tasks."""
    digest = hashlib.sha256(f"{seed}:{query_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 >= train_fraction


def rr_splits(rr: SimilarityDataset, seed: int, train_fraction: float,
              dev_fraction: float) -> tuple[list[dict], list[dict], list[dict], dict[str, str]]:
    """(train, dev, test, passages) of the build_rr tasks (see the module docstring)."""
    from stages.corpora.nugget_data import read_docs, read_tasks

    docs = read_docs(rr.path / "docs.tsv")
    train, test, passages = [], [], {}
    for task in read_tasks(rr.path / "tasks.jsonl", docs):
        passages.update({c: docs[c] for c in task.candidates})
        if heldout(task.query, seed, train_fraction):
            test.append({"id": task.query, "query": docs[task.query], "positive_ids": [task.positive], "answers": []})
        else:
            train.append({"query": docs[task.query], "positive": docs[task.positive],
                          "negatives": [docs[c] for i, c in enumerate(task.candidates) if i != task.answer]})
    n_dev = max(1, round(dev_fraction * len(train))) if train else 0
    return train[n_dev:], train[:n_dev], test, passages


def _ctx_text(ctx: dict[str, Any]) -> str:
    return passage_input(ctx.get("title") or "", ctx["text"])


def dpr_examples(path: str) -> Iterable[dict[str, Any]]:
    """Training examples of a DPR ``biencoder-nq-*.json`` (questions without a positive or
    a hard negative are skipped, as DPR's trainer does)."""
    with open(path, encoding="utf-8") as fh:
        rows = json.load(fh)
    if not isinstance(rows, list):
        raise ValueError(f"{path}: not DPR's biencoder format (a JSON list of questions)")
    for n, row in enumerate(rows):
        if "question" not in row or "positive_ctxs" not in row:
            raise ValueError(f"{path}: entry {n} has no question / positive_ctxs")
        negatives = row.get("hard_negative_ctxs") or []
        if row["positive_ctxs"] and negatives:
            yield {"query": row["question"], "positive": _ctx_text(row["positive_ctxs"][0]),
                   "negatives": [_ctx_text(c) for c in negatives]}


def dpr_test(path: str) -> list[dict[str, Any]]:
    """``nq-test.qa.csv``: ``question<TAB>["answer", ...]`` per line."""
    import ast

    out = []
    with open(path, encoding="utf-8", newline="") as fh:
        for n, row in enumerate(csv.reader(fh, delimiter="\t"), 1):
            if len(row) != 2:
                raise ValueError(f"{path}:{n}: not 'question<TAB>[answers]'")
            answers = ast.literal_eval(row[1])
            if not isinstance(answers, list) or not answers:
                raise ValueError(f"{path}:{n}: answers {row[1][:60]!r} are not a non-empty list")
            out.append({"id": f"nq-test-{n}", "query": row[0], "positive_ids": [], "answers": answers})
    return out


@dataclass(frozen=True)
class RERetrievalConfig:
    retrieval: RERetrievalData = section("data.re_retrieval")
    seed: int = section("data.seed")


@dataclass(frozen=True)
class RERetrievalInputs:
    # the stand-in's tasks (source=rr_tasks); with dpr_nq the stage uses nothing of it
    rr: SimilarityDataset = produced_by("build_rr")


class BuildRERetrieval(Stage[RERetrievalConfig, RERetrievalInputs, RetrievalData]):
    name = "build_re_retrieval"
    external_paths = ("data.re_retrieval.nq_train_file", "data.re_retrieval.nq_dev_file",
                      "data.re_retrieval.nq_test_file", "data.re_retrieval.passages_file")

    def compute(self, ctx: StageContext, config: RERetrievalConfig, inputs: RERetrievalInputs) -> None:
        cfg = config.retrieval
        out = ctx.output_dir
        if cfg.source == "rr_tasks":
            rr = inputs.rr
            train, dev, test, passages = rr_splits(rr, config.seed, cfg.train_fraction, cfg.dev_fraction)
            RetrievalData.write_passages(out, passages.items())
            counts = {"train": write_jsonl(out / "train.jsonl", train), "dev": write_jsonl(out / "dev.jsonl", dev),
                      "test": write_jsonl(out / "test.jsonl", test), "passages": len(passages)}
            stand_in = (f"build_rr tasks ({rr.path.name}): {counts['test']} held-out queries retrieving from the "
                        f"{counts['passages']} passages of all tasks; stand-in for Natural Questions over 21M passages")
            meta = {"source": "rr_tasks", "stand_in": stand_in, "match": "id", "passages_file": ""}
        else:
            for key in ("nq_train_file", "nq_dev_file", "nq_test_file", "passages_file"):
                if not getattr(cfg, key):
                    raise ValueError(f"data.re_retrieval.{key}: must name DPR's file with source=dpr_nq")
            counts = {"train": write_jsonl(out / "train.jsonl", dpr_examples(cfg.nq_train_file)),
                      "dev": write_jsonl(out / "dev.jsonl", dpr_examples(cfg.nq_dev_file)),
                      "test": write_jsonl(out / "test.jsonl", dpr_test(cfg.nq_test_file))}
            meta = {"source": "dpr_nq", "stand_in": "", "match": "answer",
                    "passages_file": str(Path(cfg.passages_file).expanduser().resolve())}
        write_json(out / RetrievalData.STATS, {**meta, "counts": counts})
        print(f"[build_re_retrieval] {meta['source']}: " + ", ".join(f"{v} {k}" for k, v in counts.items()), flush=True)
        ctx.log_metrics({f"{k}_queries" if k != "passages" else "passages": v for k, v in counts.items()})
