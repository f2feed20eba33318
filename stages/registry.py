"""Every stage of the pipeline, and the DAG they form (edges come from ``upstream``)."""

from __future__ import annotations

from stages.calibrate.calibrate_threshold import CalibrateThreshold
from stages.data.build_lm import BuildLM
from stages.data.build_mt_docs import BuildMtDocs
from stages.data.build_nugget_lm import BuildNuggetLM
from stages.data.build_pi import BuildPi
from stages.data.build_re_data import BuildREData
from stages.data.build_re_retrieval import BuildRERetrieval
from stages.data.build_rr import BuildRr
from stages.data.corpus_stats import CorpusStats
from stages.data.prepare_lm import PrepareLM
from stages.data.tokenizer import Tokenizer
from stages.evaluate.analyze_nuggets import AnalyzeNuggets
from stages.evaluate.eval_lm import EvalLM
from stages.evaluate.eval_nugget2d_ae import EvalNugget2DAE
from stages.evaluate.eval_nugget_lm import EvalNuggetLM
from stages.evaluate.eval_qa import EvalQA
from stages.evaluate.eval_re_restoration import EvalRERestoration
from stages.evaluate.eval_re_retrieval import EvalRERetrieval
from stages.evaluate.eval_reconstruction import EvalReconstruction
from stages.evaluate.eval_similarity import EvalSimilarity
from stages.evaluate.eval_summarization import EvalSummarization
from stages.framework.dag import Dag
from stages.framework.optional import resolve_optional_upstream
from stages.report.report import Report
from stages.train.sweep_nugget import SweepNugget
from stages.train.train_baselines import TrainBaselines
from stages.train.train_full_ft import TrainFullFT
from stages.train.train_nugget import TrainNugget
from stages.train.train_nugget2d import TrainNugget2D
from stages.train.train_nugget2d_ae import TrainNugget2DAE
from stages.train.train_nugget2d_ar import TrainNugget2DAR
from stages.train.train_nugget2d_ft import TrainNugget2DFT
from stages.train.train_nugget_lm import TrainNuggetLM
from stages.train.train_re import TrainRE
from stages.train.train_re_retrieval import TrainRERetrieval

ALL_STAGES = (
    CorpusStats, Tokenizer, BuildMtDocs, BuildPi, BuildRr, PrepareLM, BuildLM, TrainNugget,
    TrainNugget2D, TrainNugget2DFT, TrainFullFT, TrainNugget2DAR, CalibrateThreshold, EvalLM, EvalQA,
    EvalSummarization, TrainNugget2DAE, EvalNugget2DAE, SweepNugget, TrainBaselines, EvalSimilarity, EvalReconstruction, AnalyzeNuggets,
    BuildNuggetLM, TrainNuggetLM, EvalNuggetLM, BuildREData, TrainRE, EvalRERestoration, BuildRERetrieval,
    TrainRERetrieval,
    EvalRERetrieval, Report,
)
resolve_optional_upstream(ALL_STAGES)  # report / evals read some stages only when registered
DAG = Dag(ALL_STAGES)
