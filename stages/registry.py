"""Every stage of the pipeline, and the DAG they form (edges come from ``upstream``)."""

from __future__ import annotations

from stages.analyze_nuggets import AnalyzeNuggets
from stages.build_lm import BuildLM
from stages.build_mt_docs import BuildMtDocs
from stages.build_pi import BuildPi
from stages.build_rr import BuildRr
from stages.calibrate_threshold import CalibrateThreshold
from stages.corpus_stats import CorpusStats
from stages.eval_lm import EvalLM
from stages.eval_qa import EvalQA
from stages.eval_reconstruction import EvalReconstruction
from stages.eval_similarity import EvalSimilarity
from stages.eval_summarization import EvalSummarization
from stages.evaluation.optional import resolve_optional_upstream
from stages.framework.dag import Dag
from stages.prepare_lm import PrepareLM
from stages.report import Report
from stages.sweep_nugget import SweepNugget
from stages.tokenizer import Tokenizer
from stages.train_baselines import TrainBaselines
from stages.train_full_ft import TrainFullFT
from stages.train_nugget import TrainNugget
from stages.train_nugget2d import TrainNugget2D, TrainNugget2DAR, TrainNugget2DFT

ALL_STAGES = (
    CorpusStats, Tokenizer, BuildMtDocs, BuildPi, BuildRr, PrepareLM, BuildLM, TrainNugget,
    TrainNugget2D, TrainNugget2DFT, TrainFullFT, TrainNugget2DAR, CalibrateThreshold, EvalLM, EvalQA,
    EvalSummarization, SweepNugget, TrainBaselines, EvalSimilarity, EvalReconstruction, AnalyzeNuggets, Report,
)
resolve_optional_upstream(ALL_STAGES)  # report / evals read some stages only when registered
DAG = Dag(ALL_STAGES)
