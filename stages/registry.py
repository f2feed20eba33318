"""Every stage of the pipeline, and the DAG they form (edges come from ``upstream``)."""

from __future__ import annotations

from stages.corpora.corpus_stats import CorpusStats
from stages.framework.dag import Dag
from stages.framework.optional import resolve_optional_upstream
from stages.nugget.analyze_nuggets import AnalyzeNuggets
from stages.nugget.build_mt_docs import BuildMtDocs
from stages.nugget.build_nugget_lm import BuildNuggetLM
from stages.nugget.build_pi import BuildPi
from stages.nugget.build_rr import BuildRr
from stages.nugget.eval_nugget_lm import EvalNuggetLM
from stages.nugget.eval_reconstruction import EvalReconstruction
from stages.nugget.eval_similarity import EvalSimilarity
from stages.nugget.sweep_nugget import SweepNugget
from stages.nugget.tokenizer import Tokenizer
from stages.nugget.train_baselines import TrainBaselines
from stages.nugget.train_nugget import TrainNugget
from stages.nugget.train_nugget_lm import TrainNuggetLM
from stages.nugget2d.build_lm import BuildLM
from stages.nugget2d.calibrate_threshold import CalibrateThreshold
from stages.nugget2d.eval_efficiency import EvalEfficiency
from stages.nugget2d.eval_harness import EvalHarness
from stages.nugget2d.eval_lm import EvalLM
from stages.nugget2d.eval_nugget2d_ae import EvalNugget2DAE
from stages.nugget2d.eval_qa import EvalQA
from stages.nugget2d.eval_summarization import EvalSummarization
from stages.nugget2d.prepare_lm import PrepareLM
from stages.nugget2d.train_full_ft import TrainFullFT
from stages.nugget2d.train_nugget2d import TrainNugget2D
from stages.nugget2d.train_nugget2d_ae import TrainNugget2DAE
from stages.nugget2d.train_nugget2d_ar import TrainNugget2DAR
from stages.nugget2d.train_nugget2d_ft import TrainNugget2DFT
from stages.report.report import Report
from stages.restorable.build_re_data import BuildREData
from stages.restorable.build_re_downstream import BuildREDownstream
from stages.restorable.build_re_retrieval import BuildRERetrieval
from stages.restorable.eval_re_downstream import EvalREDownstream
from stages.restorable.eval_re_restoration import EvalRERestoration
from stages.restorable.eval_re_retrieval import EvalRERetrieval
from stages.restorable.train_re import TrainRE
from stages.restorable.train_re_retrieval import TrainRERetrieval

ALL_STAGES = (
    CorpusStats, Tokenizer, BuildMtDocs, BuildPi, BuildRr, PrepareLM, BuildLM, TrainNugget,
    TrainNugget2D, TrainNugget2DFT, TrainFullFT, TrainNugget2DAR, CalibrateThreshold, EvalLM, EvalQA,
    EvalSummarization, EvalHarness, EvalEfficiency, TrainNugget2DAE, EvalNugget2DAE, SweepNugget, TrainBaselines, EvalSimilarity, EvalReconstruction, AnalyzeNuggets,
    BuildNuggetLM, TrainNuggetLM, EvalNuggetLM, BuildREData, TrainRE, EvalRERestoration, BuildRERetrieval,
    TrainRERetrieval,
    EvalRERetrieval, BuildREDownstream, EvalREDownstream, Report,
)
resolve_optional_upstream(ALL_STAGES)  # report / evals read some stages only when registered
DAG = Dag(ALL_STAGES)
