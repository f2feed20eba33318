"""The ``eval.*`` section: where each evaluation's section sits (the sections themselves are
their studies', ``stages/<study>/config.py``), with the settings several evaluations share;
see :mod:`stages.config.schema`. Training jobs live under ``train.*`` (the baselines':
``train.baselines``), calibration under ``calibrate.*``, the report under ``report``."""

from __future__ import annotations

from dataclasses import dataclass

from stages.config.precision import PRECISION_CHOICES
from stages.config.validate import spec
from stages.nugget.config import BaselinesSection, NuggetLMEval
from stages.nugget2d.config import (
    AutoencodingEval,
    EfficiencyEval,
    HarnessEval,
    LMEval,
    PressSection,
    QAEval,
    SummarizationEval,
)
from stages.restorable.config import REDownstreamEval, REEval


@dataclass
class EvalSection:
    dtype: str = spec(
        "fp32", help="Weights / activations of every evaluated, calibrated or analysed model: fp32, bf16, or "
        "auto (bf16 on a GPU, run.device=cuda, or a CPU with bf16 matrix instructions, else fp32; decided when "
        "the config loads: stages/config/precision.py).", choices=PRECISION_CHOICES,
    )
    beam_size: int = spec(5, help="Beam size for reconstruction decoding.", ge=1)
    reconstruction_extra_tokens: int = spec(
        16, help="eval_reconstruction decodes up to the longest reference of the documents (in the "
        "model's tokens) plus this many: whole documents (no fixed cap).", ge=0,
    )
    max_examples: int = spec(0, help="Evaluate at most this many examples (0 = all).", ge=0)
    max_tasks: int = spec(0, help="PI / RR tasks per dataset (0 = all).", ge=0)
    batch_size: int = spec(16, help="Documents per encoder / decoder batch.", ge=1)
    pi_data_dir: str = spec(
        "", help="Authors' released nugget-data PI folder (docs.txt + task.jsonl); empty = build_pi's."
    )
    rr_data_dir: str = spec("", help="Same for RR; empty = build_rr's output.")
    analysis_docs: int = spec(128, help="Documents for nugget token statistics (paper fig. 5: 128).", ge=1)
    nugget_split: str = spec(
        "dev", help="Split of build_mt_docs that eval_reconstruction (fig. 4) and analyze_nuggets (figs. 5-8) read: "
        "dev as the paper (WMT19's dev set); test where a profile's settings were chosen on dev (profile=small).",
        choices=("dev", "test"))
    highlight_docs: int = spec(4, help="Documents shown on the highlighted-nuggets page (fig. 6).", ge=1)
    probe_docs: int = spec(64, help="Documents of the probability-gain probe (figs. 7-8).", ge=1)
    baselines: BaselinesSection = spec(BaselinesSection(), help="Baseline systems (train_baselines stage).")
    presses: PressSection = spec(PressSection(), help="Training-free KV presses (eval_qa, eval_summarization, eval_lm).")
    lm: LMEval = spec(LMEval(), help="eval_lm stage.")
    qa: QAEval = spec(QAEval(), help="eval_qa stage.")
    summarization: SummarizationEval = spec(SummarizationEval(), help="eval_summarization stage.")
    harness: HarnessEval = spec(HarnessEval(), help="eval_harness stage (lm-evaluation-harness; docs/harness.md).")
    efficiency: EfficiencyEval = spec(EfficiencyEval(), help="eval_efficiency stage (decoding and training cost; "
                                      "docs/performance.md).")
    autoencoding: AutoencodingEval = spec(AutoencodingEval(), help="eval_nugget2d_ae stage (Nugget2D §4).")
    nugget_lm: NuggetLMEval = spec(NuggetLMEval(), help="eval_nugget_lm stage (Nugget table 3).")
    re: REEval = spec(REEval(), help="eval_re_restoration / eval_re_retrieval stages (the RE study).")
    re_downstream: REDownstreamEval = spec(REDownstreamEval(), help="eval_re_downstream stage (RE table 10: a probe "
                                           "on the frozen RE embeddings).")
