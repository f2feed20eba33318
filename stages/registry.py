"""Every stage of the pipeline, and the DAG they form (edges come from ``upstream``)."""

from __future__ import annotations

from stages.corpus_stats import CorpusStats
from stages.framework.dag import Dag
from stages.report import Report

ALL_STAGES = (CorpusStats, Report)
DAG = Dag(ALL_STAGES)
