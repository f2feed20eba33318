"""Every stage of the pipeline, and the DAG they form (edges come from ``upstream``)."""

from __future__ import annotations

from stages.build_lm import BuildLM
from stages.build_mt_docs import BuildMtDocs
from stages.build_pi import BuildPi
from stages.build_rr import BuildRr
from stages.corpus_stats import CorpusStats
from stages.framework.dag import Dag
from stages.prepare_lm import PrepareLM
from stages.report import Report
from stages.tokenizer import Tokenizer
from stages.train_nugget import TrainNugget

ALL_STAGES = (
    CorpusStats, Tokenizer, BuildMtDocs, BuildPi, BuildRr, PrepareLM, BuildLM, TrainNugget, Report,
)
DAG = Dag(ALL_STAGES)
