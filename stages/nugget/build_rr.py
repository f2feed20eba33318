"""Stage ``build_rr``: passage reranking over sectioned articles (Nugget app. A.2).

For each article, the lead section is the query (``L<i>``) and one other section of the
same article, drawn with seed ``data.seed``, is the answer; ``negatives`` sections are
retrieved by BM25 from the non-lead sections of *other* articles (every section of the
query's own article is excluded). Articles without a lead or without a second section
are skipped and counted. Mining runs as Ray tasks; token lengths (model tokenizer) on
Ray Data.

Offline (profile=tiny) the articles are gensim's test Wikipedia dump (or the Python
docs). Outputs ``tasks.jsonl``, ``docs.tsv``, ``nugget-data/`` and ``stats.json``
(table-1 statistics as MLflow metrics).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from stages.corpora.corpora import rr_articles
from stages.corpora.nugget_data import Task, write_dataset
from stages.corpora.stats import length_stats
from stages.corpora.tokens import count_tokens
from stages.framework import raydata
from stages.framework.contract import section
from stages.framework.stage import Stage, StageContext
from stages.nugget.artifacts.data import SimilarityDataset, TokenizerFolder
from stages.nugget.bm25 import BM25Config, bm25_tokens, mine_pool
from stages.nugget.parallel import map_chunks

if TYPE_CHECKING:
    from stages.nugget.config import BM25Params, RRData

log = logging.getLogger("nugget.build_rr")
QUERIES_PER_TASK = 256


def _mine(chunk: Sequence[int], q_tokens: Sequence[list[str]], pool_tokens: Sequence[list[str]],
          pool_groups: np.ndarray, q_groups: Sequence[int], positives: Sequence[int], n_neg: int,
          cfg: BM25Config) -> list[tuple[list[int], int]]:
    return mine_pool([q_tokens[i] for i in chunk], pool_tokens, pool_groups,
                     [q_groups[i] for i in chunk], [positives[i] for i in chunk], n_neg, cfg)


@dataclass(frozen=True)
class RrConfig:
    rr: RRData = section("data.rr")
    bm25: BM25Params = section("data.bm25")
    seed: int = section("data.seed")
    max_docs: int = section("data.max_docs")


@dataclass(frozen=True)
class RrInputs:
    tokenizer: TokenizerFolder


class BuildRr(Stage[RrConfig, RrInputs, SimilarityDataset]):
    name = "build_rr"
    resources = {"num_cpus": 0}
    fans_out = True  # the executor reserves every CPU for it
    external_paths = ("data.rr.local_files",)

    @classmethod
    def offline_sources(cls, sections: dict[str, Any]) -> tuple[str, ...]:
        source = sections["data.rr"].source
        return (source,) if source in ("gensim_wiki", "python_docs") else ()

    def compute(self, ctx: StageContext, config: RrConfig, inputs: RrInputs) -> None:
        raydata.configure()
        cfg, max_docs = config.rr, config.max_docs
        bm25 = BM25Config(**vars(config.bm25))
        t0 = time.time()
        articles = rr_articles(cfg, ctx.sources_dir)
        pool, pool_groups = [], []
        for a, art in enumerate(articles):
            for _, text in art.sections[1:]:
                pool.append(text)
                pool_groups.append(a)
        groups = np.asarray(pool_groups)
        no_lead = [a for a, art in enumerate(articles) if not art.sections[0][1]]
        no_second = [a for a, art in enumerate(articles) if art.sections[0][1] and len(art.sections) < 2]
        eligible = [a for a, art in enumerate(articles) if art.sections[0][1] and len(art.sections) >= 2]
        if max_docs:
            eligible = eligible[:max_docs]
        if not eligible:
            raise ValueError(f"build_rr: no article of {cfg.source!r} has a lead and a second section")
        rng = np.random.default_rng(config.seed)
        positives = [int(rng.choice(np.flatnonzero(groups == a))) for a in eligible]
        others = int((groups != eligible[0]).sum())
        if others < cfg.negatives:  # the pool's size is the corpus's: known only once it is read
            raise ValueError(f"build_rr: data.rr.negatives={cfg.negatives} is more than the {others} sections of "
                             f"other articles in {cfg.source!r}; lower it")

        chunks = [list(range(s, min(s + QUERIES_PER_TASK, len(eligible))))
                  for s in range(0, len(eligible), QUERIES_PER_TASK)]
        t_mine = time.time()
        mined, qps = map_chunks(
            _mine, chunks,
            ([bm25_tokens(articles[a].sections[0][1]) for a in eligible], [bm25_tokens(t) for t in pool],
             groups, eligible, positives, cfg.negatives, bm25),
            "build_rr BM25 mining (queries)",
        )
        tasks = [Task(f"L{q}", tuple(f"R{j}" for j in cands), ans) for q, (cands, ans) in enumerate(mined)]
        used = sorted({j for cands, _ in mined for j in cands})
        queries = [articles[a].sections[0][1] for a in eligible]
        write_dataset(ctx.output_dir, [(f"L{q}", t) for q, t in enumerate(queries)]
                      + [(f"R{j}", pool[j]) for j in used], tasks)

        lengths = count_tokens(queries + [pool[j] for j in used], inputs.tokenizer.path)
        stats: dict[str, float] = {
            "articles": len(articles),
            "skipped_no_lead": len(no_lead),
            "skipped_no_second_section": len(no_second),
            "pool_sections": len(pool),
            "tasks": len(tasks),
            "answer_in_top1_rate": sum(t.answer == 0 for t in tasks) / len(tasks),
            "mining_queries_per_s": qps,
            "mining_seconds": time.time() - t_mine,
            **length_stats("query", lengths[: len(queries)]),
            **length_stats("doc", lengths[len(queries) :]),
        }
        stats["wall_seconds"] = time.time() - t0
        log.info("build_rr: %d tasks from %d articles in %.1fs", len(tasks), len(articles), stats["wall_seconds"])
        ctx.log_artifact(ctx.write_json("stats.json", {**stats, "source": cfg.source}))
        ctx.log_metrics(stats)
