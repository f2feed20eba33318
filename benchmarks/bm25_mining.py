"""BM25 negatives mining throughput: our bm25s miner vs rank_bm25, same data, one run.

Data: the build_pi documents of an artifact (``docs.tsv``: queries ``L<i>``, paraphrases
``R<i>``), mined exactly as build_pi does (window, block, negatives), single process.
rank_bm25 runs ``BM25Okapi(epsilon=0)``, which equals bm25s ``robertson`` up to the
constant (k1 + 1); both are timed on the same windows with the same tokens, and the
share of identical negative sets is reported as a sanity check.

    python benchmarks/bm25_mining.py /path/to/build_pi/<key> [--queries 512]
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

import numpy as np

from stages.corpora.nugget_data import read_docs
from stages.nugget.bm25 import (
    BM25Config,
    block_window,
    bm25_tokens,
    mine_windows,
    rank_candidates,
)

OUT = Path(__file__).parent / "results" / "bm25_mining.json"


def rank_bm25_mine(lt, rt, queries, window, block, n_neg):
    from rank_bm25 import BM25Okapi

    out, cached = [], None
    for i in queries:
        lo, hi = block_window(i, len(rt), window, block)
        if cached is None or cached[0] != (lo, hi):
            cached = ((lo, hi), BM25Okapi(rt[lo:hi], k1=1.5, b=0.75, epsilon=0.0))
        score = np.asarray(cached[1].get_scores(lt[i]), dtype=np.float32)
        excluded = np.zeros(hi - lo, dtype=bool)
        excluded[i - lo] = True
        local, answer = rank_candidates(score, excluded, i - lo, n_neg)
        out.append(([lo + j for j in local], answer))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("artifact", type=Path)
    ap.add_argument("--queries", type=int, default=512)
    ap.add_argument("--window", type=int, default=1024)
    ap.add_argument("--block", type=int, default=32)
    ap.add_argument("--negatives", type=int, default=19)
    args = ap.parse_args()
    docs = read_docs(args.artifact / "docs.tsv")
    n = sum(1 for k in docs if k.startswith("R"))
    lt = [bm25_tokens(docs[f"L{i}"]) for i in range(n)]
    rt = [bm25_tokens(docs[f"R{i}"]) for i in range(n)]
    queries = list(range(min(args.queries, n)))
    results = {"documents": n, "queries": len(queries), "window": args.window, "block": args.block,
               "negatives": args.negatives, "machine": platform.processor() or platform.machine()}
    timed = {}
    # warm-up (imports, first-call allocation) so that no variant pays it inside its timing
    mine_windows(lt, rt, queries[: args.block], args.window, args.block, args.negatives, BM25Config())
    for name, fn in (
        ("bm25s_robertson", lambda: mine_windows(lt, rt, queries, args.window, args.block, args.negatives,
                                                 BM25Config("robertson", 1.5, 0.75))),
        ("bm25s_lucene", lambda: mine_windows(lt, rt, queries, args.window, args.block, args.negatives,
                                              BM25Config("lucene", 1.5, 0.75))),
        ("rank_bm25_okapi", lambda: rank_bm25_mine(lt, rt, queries, args.window, args.block, args.negatives)),
    ):
        t0 = time.perf_counter()
        timed[name] = fn()
        dt = time.perf_counter() - t0
        results[f"{name}_seconds"] = dt
        results[f"{name}_queries_per_s"] = len(queries) / dt
    same = sum(set(a[0]) == set(b[0]) for a, b in zip(timed["bm25s_robertson"], timed["rank_bm25_okapi"], strict=True))
    results["robertson_vs_rank_bm25_same_candidates_rate"] = same / len(queries)
    results["speedup_bm25s_robertson_over_rank_bm25"] = (
        results["bm25s_robertson_queries_per_s"] / results["rank_bm25_okapi_queries_per_s"])
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(results, indent=2) + "\n")
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
