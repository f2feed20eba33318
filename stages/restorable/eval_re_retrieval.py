"""Stage ``eval_re_retrieval``: passage retrieval with the RE bi-encoders (RE §4.4,
tables 4, 9), as DPR measures it.

Each test query of ``build_re_retrieval`` (at most ``eval.re.max_queries``) retrieves
from the whole passage collection by exact inner-product search: its query-tower vector
against every passage's passage-tower vector, the passages streamed in chunks with a
running top-k (k = the largest of ``eval.re.recall_at``). A retrieved passage is a hit
when it is one of the query's positive passages (``match: id``, the stand-in) or when it
contains one of its answer strings (``match: answer``: DPR's rule on Natural Questions,
`has_answer`: the passage's text, not its title, tokenised as DPR does, punctuation kept). Recall@k (x 100) for each k of ``eval.re.recall_at`` (below the
collection's size) and MRR@k_max (x 100), each with its per-query statistics (``units``: the
query is the independent unit; its id is the same for every bi-encoder, so the report pairs
them) and its 95% interval (`retrieval_row`). Floors (`random_ranking_floors`): what a uniformly
random ranking of the collection reaches on the same queries.

Outputs: the `EvalTable` (one row per bi-encoder, ``paper_row`` its RE table 9 row;
metric ``passages``: the collection's size; ``ignores_input`` from its trainer state) and ``examples.jsonl`` (per system and query: the
query, the first `TOP_TEXTS` passages retrieved with their text and whether each is a hit, every
retrieved id, the answers or positive ids, the rank of the first hit (0 = none in the top k), the
reciprocal rank and hit@k; `retrieval_samples`).
"""

from __future__ import annotations

import time
import unicodedata
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from functools import lru_cache, partial
from typing import TYPE_CHECKING, Any

import regex
import torch

from stages.artifacts.evaluate import Column, EvalTable, TableRow
from stages.common.degenerate import constant_outputs
from stages.common.floors import Floor
from stages.common.intervals import hits_interval
from stages.common.resampling import UnitSample
from stages.evaluation.publish import publish
from stages.evaluation.samples import Sample
from stages.framework.contract import section
from stages.framework.stage import Stage, StageContext
from stages.restorable.artifacts import Passage, RetrievalData, TrainedRetrieval, ignored_inputs
from stages.restorable.embedding import embed

if TYPE_CHECKING:
    from stages.restorable.config import REEval

CHUNK = 4096  # passages encoded and scored at once: [queries, CHUNK] scores per step


# DPR's SimpleTokenizer (dpr/utils/tokenizers.py): a run of letters / digits / marks, or any
# single character that is neither a separator nor a control; so punctuation stays, one token
# per character ("AT&T" -> at & t). Its flags kept, IGNORECASE included (no effect on these classes).
DPR_TOKEN = regex.compile(r"[\p{L}\p{N}\p{M}]+|[^\p{Z}\p{C}]", flags=regex.IGNORECASE | regex.UNICODE | regex.MULTILINE)


def dpr_tokens(text: str) -> list[str]:
    """DPR's tokens of ``text``: NFD-normalised (accents stay, as combining marks), tokenised
    by `DPR_TOKEN`, lower-cased."""
    return [m.group().lower() for m in DPR_TOKEN.finditer(unicodedata.normalize("NFD", text))]


def has_answer(text: str, answers: list[str]) -> bool:
    """DPR's hit rule (``has_answer``, match_type "string", dpr/data/qa_validation.py): some
    answer's token sequence occurs in the passage *text's* (`dpr_tokens`; the title is not
    searched). An answer without tokens never matches (DPR's would match every passage)."""
    words = dpr_tokens(text)
    for answer in answers:
        target = dpr_tokens(answer)
        if target and any(words[i : i + len(target)] == target for i in range(len(words) - len(target) + 1)):
            return True
    return False


def _chunks(lines: Iterator[Passage], size: int) -> Iterator[list[Passage]]:
    chunk: list[Passage] = []
    for line in lines:
        chunk.append(line)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def search(queries: torch.Tensor, passages: Iterator[Passage], encode: Callable[[list[str]], torch.Tensor], k: int,
           chunk_size: int = CHUNK) -> tuple[torch.Tensor, int]:
    """Exact top-``k`` passage positions ``[Q, k]`` (best first; positions in the stream)
    for ``queries [Q, d]``, and the number of passages; ``encode(texts) -> [n, d]``."""
    best_scores = torch.full((queries.shape[0], 0), float("-inf"), device=queries.device)
    best = torch.zeros((queries.shape[0], 0), dtype=torch.long, device=queries.device)
    seen = 0
    for chunk in _chunks(passages, chunk_size):
        scores = queries @ encode([p.encoded for p in chunk]).T
        positions = torch.arange(seen, seen + len(chunk), device=queries.device).expand(queries.shape[0], -1)
        scores, positions = torch.cat([best_scores, scores], 1), torch.cat([best, positions], 1)
        top = scores.topk(min(k, scores.shape[1]), dim=1)
        best_scores, best = top.values, positions.gather(1, top.indices)
        seen += len(chunk)
    return best.cpu(), seen


def top_passages(top: torch.Tensor, data: RetrievalData) -> dict[int, Passage]:
    """The passages at the positions ``top`` holds (a second pass over the collection, keeping
    only those)."""
    wanted = set(top.flatten().tolist())
    return {i: line for i, line in enumerate(data.passage_lines()) if i in wanted}


def is_hit(passage: Passage, test: dict[str, Any], data: RetrievalData) -> bool:
    """Whether ``passage`` answers ``test`` (``data.match``: a positive id, or DPR's `has_answer`)."""
    return passage.id in test["positive_ids"] if data.match == "id" else has_answer(passage.text, test["answers"])


def first_hits(top: torch.Tensor, tests: list[dict[str, Any]], data: RetrievalData,
               found: dict[int, Passage] | None = None) -> list[int]:
    """1-based rank of each query's first hit among its retrieved passages (0: none);
    ``found``: `top_passages` when already read."""
    found = found if found is not None else top_passages(top, data)
    ranks = []
    for row, positions in zip(tests, top.tolist(), strict=True):
        ranks.append(next((r for r, pos in enumerate(positions, 1) if is_hit(found[pos], row, data)), 0))
    return ranks


TOP_TEXTS = 5  # retrieved passages whose text a sample keeps (every retrieved id is kept)


def retrieval_samples(record: dict[str, Any], tests: list[dict[str, Any]], top: torch.Tensor,
                      found: dict[int, Passage], ranks: list[int], ks: list[int], data: RetrievalData
                      ) -> list[dict[str, Any]]:
    """One sample row (`stages.evaluation.samples`) per query: the ``query`` and its ``top_hits``
    (the first `TOP_TEXTS` retrieved passages: rank, id, title, text, hit), the target (the
    answers, or the positive ids with ``match: id``), the first-ranked passage's text as output;
    metrics: ``first_hit_rank`` (0: none), ``reciprocal_rank_x100``, ``hit@k`` per k, every
    retrieved id (``retrieved``); settings: the system's towers' token limits and pooling."""
    settings = {k: record.get(k) for k in ("paper_row", "max_query_tokens", "max_passage_tokens", "pooling")}
    rows = []
    for t, positions, rank in zip(tests, top.tolist(), ranks, strict=True):
        passages = [found[p] for p in positions]
        hits = [{"rank": r, "id": p.id, "title": p.title, "text": p.text, "hit": is_hit(p, t, data)}
                for r, p in enumerate(passages[:TOP_TEXTS], 1)]
        rows.append(Sample(t["id"], record["system"], {"query": t["query"], "top_hits": hits},
                           t["positive_ids"] if data.match == "id" else t["answers"],
                           passages[0].text if passages else None,
                           {"first_hit_rank": rank, "reciprocal_rank_x100": 100.0 / rank if rank else 0.0,
                            **{f"hit@{k}": 0 < rank <= k for k in ks}, "retrieved": [p.id for p in passages]},
                           settings, generated=False).row())
    return rows


def retrieval_row(record: dict[str, Any], ranks: list[int], passages: int, ks: list[int], queries: list[str],
                  top1: list[int] | None = None) -> TableRow:
    """One bi-encoder's row from the rank of each query's first hit (``ranks``; ``queries`` their
    ids, the same for every bi-encoder): R@k of each k below the passages and MRR (x 100), each
    with its per-query statistics (``units``: [hits or reciprocal ranks, queries] per query id, so
    the report pairs bi-encoders over the same queries). R@k's 95% interval: Wilson's for a share
    of independent queries (one test row each), else the bootstrap over queries; MRR's: the
    bootstrap over queries (`stages.common.resampling`; none below `MIN_UNITS`). Flagged uninformative when
    its first-ranked passage (``top1``, per query) is (nearly) constant (`stages.common.degenerate`)."""
    # x 100 per query: a hit in the top k (k >= the passages: 100 by construction, not measured), 100 / rank
    per_query = {f"r@{k}": [100.0 * (0 < r <= k) for r in ranks] for k in ks if k < passages}
    per_query["mrr"] = [100.0 / r if r else 0.0 for r in ranks]
    units = {m: UnitSample.of("query", "ratio", queries, [[x, 1.0] for x in values])
             for m, values in per_query.items()}
    metrics: dict[str, float | None] = {**{m: u.value() for m, u in units.items()}, "passages": passages}
    intervals = {}
    for m, u in units.items():
        independent_share = m != "mrr" and u.n == len(ranks)  # no query id twice among the test rows
        ci = hits_interval([x > 0 for x in per_query[m]]) if independent_share else u.interval()
        if ci is not None:
            intervals[m] = ci
    flag = constant_outputs(top1) if top1 is not None else None
    return TableRow(system=record["system"], metrics=metrics, n=len(ranks), paper_row=record["paper_row"],
                    interval=intervals, units=units, flag=f"first-ranked passage: {flag}" if flag else "")


@lru_cache(maxsize=256)
def first_hit_chances(passages: int, positives: int, k_max: int) -> tuple[float, ...]:
    """Under a uniformly random ranking of ``passages`` of which ``positives`` are hits, the
    probability that the first hit is at rank r, for r = 1 .. min(k_max, passages):
    P(none of the first r - 1) * positives / (passages - r + 1)."""
    if passages < 1 or not 0 <= positives <= passages:
        raise ValueError(f"first_hit_chances: {positives} positives among {passages} passages")
    out, none_yet = [], 1.0
    for r in range(1, min(k_max, passages) + 1):
        left = passages - r + 1  # passages not yet ranked
        out.append(none_yet * positives / left)
        none_yet *= (left - positives) / left
    return tuple(out)


def random_ranking_floors(passages: int, positives: list[int], ks: list[int], k_max: int, match: str
                          ) -> dict[str, Floor]:
    """The competence floors of R@k (k below ``passages``) and MRR@``k_max``: their expectation
    (x 100, averaged over the test queries, ``positives`` the hits each has in the collection)
    under a uniformly random ranking of the whole collection, which every query ranks. With one
    positive, R@k = 100 k / passages and MRR = `stages.common.floors.random_mrr` (k_max >= passages)."""
    chances = [first_hit_chances(passages, min(m, passages), k_max) for m in positives]
    what = f"a uniformly random ranking of the {passages} passages"
    if match == "answer":  # DPR's rule finds every passage holding the answer string: counting them is a scan of 21M
        what += (", one answer passage per query assumed (DPR's answer match may count more, which raises the "
                 "random ranking's expectation)")
    floors = {f"r@{k}": Floor(100.0 * sum(sum(c[:k]) for c in chances) / len(chances), True, what)
              for k in ks if k < passages}
    mrr = 100.0 * sum(sum(p / r for r, p in enumerate(c, 1)) for c in chances) / len(chances)
    return floors | {"mrr": Floor(mrr, True, what)}


@dataclass(frozen=True)
class RetrievalConfig:
    re: REEval = section("eval.re")
    dtype: str = section("eval.dtype")


@dataclass(frozen=True)
class RetrievalInputs:
    trained: TrainedRetrieval
    data: RetrievalData


class EvalRERetrieval(Stage[RetrievalConfig, RetrievalInputs, EvalTable]):
    name = "eval_re_retrieval"
    uses_device = True

    def compute(self, ctx: StageContext, config: RetrievalConfig, inputs: RetrievalInputs) -> None:
        cfg = config.re
        trained, data = inputs.trained, inputs.data
        tests = list(data.rows("test", cfg.max_queries))
        if not tests:
            raise ValueError(f"eval_re_retrieval: {data.path}/test.jsonl has no queries")
        k_max = max(cfg.recall_at)
        ignoring = ignored_inputs(trained)
        rows, examples, passages = [], [], 0
        for n, record in enumerate(trained.systems, 1):
            tick = time.time()
            query_tower, passage_tower = trained.towers(record, ctx.device, config.dtype)
            tokenizer = trained.tokenizer(record)
            queries = embed(query_tower, tokenizer, [t["query"] for t in tests], record["max_query_tokens"],
                            cfg.batch_size, ctx.device)
            encode = partial(embed, passage_tower, tokenizer, max_tokens=record["max_passage_tokens"],
                             batch_size=cfg.batch_size, device=ctx.device)
            top, passages = search(queries, data.passage_lines(), encode, k_max)
            found = top_passages(top, data)
            ranks = first_hits(top, tests, data, found)
            row = retrieval_row(record, ranks, passages, list(cfg.recall_at), [t["id"] for t in tests],
                                top[:, 0].tolist())
            rows.append(replace(row, ignores_input=ignoring.get(record["system"], "")))
            examples += retrieval_samples(record, tests, top, found, ranks, sorted(cfg.recall_at), data)
            shown = ", ".join(f"{m} {v:.1f}" for m, v in row.metrics.items() if m != "passages")
            print(f"[eval_re_retrieval] {n}/{len(trained.systems)} {record['system']}: {shown} ({len(tests)} queries, "
                  f"{passages} passages, {time.time() - tick:.1f}s)", flush=True)
        ks = [k for k in sorted(cfg.recall_at) if k < passages]
        positives = [len(set(t["positive_ids"])) if data.match == "id" else 1 for t in tests]
        table = EvalTable(
            title="RE tables 4, 9: passage retrieval with bi-encoders from the RE encoders",
            columns=[Column(f"r@{k}", f"R@{k}") for k in ks] + [Column("mrr", f"MRR@{k_max}"),
                                                               Column("passages", "passages", "{:.0f}")],
            rows=rows, stand_in=data.stand_in,
            floors=random_ranking_floors(passages, positives, ks, k_max, data.match),
            notes=[f"{len(tests)} test queries; exact inner-product search over all {passages} passages; a hit is "
                   + ("a positive passage of the query" if data.match == "id" else "a passage containing an answer "
                      "string (DPR)") + "; intervals: R@k Wilson's (a share of independent queries), MRR the "
                   "percentile bootstrap over queries"],
        )
        publish(ctx, table, examples)
