"""Every stage of the pipeline, and the DAG they form (edges come from ``upstream``)."""

from __future__ import annotations

from stages.build_mt_docs import BuildMtDocs
from stages.corpus_stats import CorpusStats
from stages.framework.dag import Dag
from stages.report import Report
from stages.tokenizer import Tokenizer

ALL_STAGES = (CorpusStats, Tokenizer, BuildMtDocs, Report)
DAG = Dag(ALL_STAGES)
