"""Stage ``build_pi``: document-level paraphrase identification (Nugget §6.1, app. A.1).

Both sides' sentences are walked in parallel into documents of at most
``data.pi.max_doc_tokens`` subwords (model tokenizer), each sentence kept with
probability ``keep_prob`` independently per side (seed ``data.seed``). For each
document (query ``L<i>``) its paraphrase ``R<i>`` is the answer and ``negatives``
paraphrases are retrieved by BM25 from a window of ``window`` documents around it,
``R<i>`` excluded (:mod:`stages.nugget.bm25`). Mining runs as Ray tasks.

Offline (profile=tiny) the pairs are KJV/WEB Bible verses (documents never cross a
book). Outputs ``tasks.jsonl``, ``docs.tsv``, ``nugget-data/`` (the authors' layout) and
``stats.json``; statistics as in the Nugget paper's table 1 (queries, mean query and
document length in tokens) are MLflow metrics.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from stages.corpora.corpora import pi_corpus
from stages.corpora.nugget_data import Task, write_dataset
from stages.corpora.stats import length_stats
from stages.framework import raydata
from stages.framework.contract import section
from stages.framework.stage import Stage, StageContext
from stages.nugget.artifacts.data import SimilarityDataset, TokenizerFolder
from stages.nugget.bm25 import BM25Config, bm25_tokens, mine_windows
from stages.nugget.documents import build_documents
from stages.nugget.parallel import map_chunks

if TYPE_CHECKING:
    from stages.nugget.config import BM25Params, PIData

log = logging.getLogger("nugget.build_pi")
BLOCKS_PER_TASK = 8


def _mine(chunk: Sequence[int], query_tokens: Sequence[list[str]], cand_tokens: Sequence[list[str]], window: int,
          block: int, n_neg: int, cfg: BM25Config) -> list[tuple[list[int], int]]:
    return mine_windows(query_tokens, cand_tokens, chunk, window, block, n_neg, cfg)


@dataclass(frozen=True)
class PiConfig:
    pi: PIData = section("data.pi")
    bm25: BM25Params = section("data.bm25")
    seed: int = section("data.seed")
    max_docs: int = section("data.max_docs")


@dataclass(frozen=True)
class PiInputs:
    tokenizer: TokenizerFolder


class BuildPi(Stage[PiConfig, PiInputs, SimilarityDataset]):
    name = "build_pi"
    resources = {"num_cpus": 0}  # its Ray Data / Ray tasks take the CPUs
    fans_out = True  # the executor reserves every CPU for it
    external_paths = ("data.pi.parabank_path",)

    @classmethod
    def offline_sources(cls, sections: dict[str, Any]) -> tuple[str, ...]:
        return ("sword_bible",) if sections["data.pi"].source == "sword_bible" else ()

    def compute(self, ctx: StageContext, config: PiConfig, inputs: PiInputs) -> None:
        raydata.configure()
        cfg, max_docs = config.pi, config.max_docs
        bm25 = BM25Config(**vars(config.bm25))
        if cfg.window < cfg.window_block:
            raise ValueError(f"data.pi.window={cfg.window} must be >= data.pi.window_block={cfg.window_block}")
        t0 = time.time()
        corpus = pi_corpus(cfg, ctx.sources_dir)
        built = build_documents(corpus, inputs.tokenizer.path, cfg.max_doc_tokens,
                                keep_prob=cfg.keep_prob, seed=config.seed)
        docs = built.docs[:max_docs] if max_docs else built.docs
        if len(docs) < cfg.negatives + 1:
            raise ValueError(
                f"build_pi: {len(docs)} documents cannot give {cfg.negatives} negatives each "
                f"(source {cfg.source!r}, data.max_docs={max_docs})"
            )
        block = cfg.window_block
        ids = list(range(len(docs)))
        chunks = [ids[s : s + block * BLOCKS_PER_TASK] for s in range(0, len(ids), block * BLOCKS_PER_TASK)]
        t_mine = time.time()
        mined, qps = map_chunks(
            _mine, chunks,
            ([bm25_tokens(d.left) for d in docs], [bm25_tokens(d.right) for d in docs],
             cfg.window, block, cfg.negatives, bm25),
            "build_pi BM25 mining (queries)",
        )
        tasks = [Task(f"L{i}", tuple(f"R{j}" for j in cands), ans) for i, (cands, ans) in enumerate(mined)]
        write_dataset(ctx.output_dir, [(f"L{i}", d.left) for i, d in enumerate(docs)]
                      + [(f"R{i}", d.right) for i, d in enumerate(docs)], tasks)

        stats: dict[str, float] = {
            "sentence_pairs": built.units,
            "documents_built": len(built.docs),
            "truncated_docs": built.truncated,
            "repacked_docs": built.repacked,
            "skipped_docs_one_side_empty": built.empty_skipped,
            "deletion_rate_left": built.deleted_left / max(built.units, 1),
            "deletion_rate_right": built.deleted_right / max(built.units, 1),
            "answer_in_top1_rate": sum(t.answer == 0 for t in tasks) / len(tasks),
            "mining_queries_per_s": qps,
            "mining_seconds": time.time() - t_mine,
            **length_stats("query", [d.n_left for d in docs]),
            **length_stats("doc", [d.n_right for d in docs]),
            **{k: float(v) for k, v in corpus.notes.items()},
        }
        stats["tasks"] = len(tasks)
        stats["wall_seconds"] = time.time() - t0
        log.info("build_pi: %d tasks in %.1fs (%.1f queries/s mining)", len(tasks), stats["wall_seconds"], qps)
        ctx.log_artifact(ctx.write_json("stats.json", {**stats, "source": corpus.source}))
        ctx.log_metrics(stats)
