"""Stage ``calibrate_threshold``: the autoregressive threshold Lambda (Nugget2D §2.5).

The scorer the autoregressive model reuses, frozen, to solve the cold start (paper §2.5;
``train_nugget2d_ar`` trains with the Lambda calibrated here): ``train_nugget2d``'s
autoencoding compressor when it trained one (``train.nugget2d.ar_scorer``), else its model) runs over ``sample_docs`` segments per corpus of ``build_lm`` (``calibrate.threshold.sample_split``), exactly as
autoregressive mode scores tokens (frozen LM, layer l, the scorer's window). Lambda is
the ``1 - r`` quantile of the pooled scores (r = ``nugget2d.ratio``). The ratio it
realises is then measured on ``heldout_docs`` segments of another split, per document
(mean, spread) and pooled.

Outputs: `stages.nugget2d.artifacts.CalibratedThreshold` (Lambda, r, realised ratios, the
scorer's fingerprint; the one place downstream autoregressive stages take Lambda from),
``scores_hist.png``,
``heldout_ratios.jsonl`` (per document).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass

import numpy as np
import pyarrow.parquet as pq
import torch

from nugget_core.nugget2d import Nugget2DConfig
from stages.common.progress import progress_logger
from stages.framework.contract import produced_by, section
from stages.framework.stage import Stage, StageContext
from stages.nugget2d.artifacts import (
    CalibratedThreshold,
    LMRecords,
    PreparedLM,
    TrainedNugget2D,
    scorer_fingerprint,
)
from stages.nugget2d.config import ThresholdCalibration
from stages.nugget2d.quantile import calibrate, document_ratios, histogram_png, spread

log = progress_logger("nugget.calibrate_threshold")
# The scorer calibrated is the compressor's; train_nugget2d_ar copies it in frozen, so
# autoregressive training and decoding use the very weights Lambda was calibrated on.
SCORER_STAGE = "train_nugget2d"


def _segments(path, split: str, limit: int, rng: np.random.Generator) -> list[list[int]]:
    rows = [r for r in pq.read_table(path).to_pylist() if r["split"] == split]
    if not rows:
        raise ValueError(f"{path.name} has no segments in split {split!r}")
    pick = rng.permutation(len(rows))[:limit]
    return [rows[i]["distant"] + rows[i]["recent"] for i in sorted(pick)]


def _scores(model, segments: list[list[int]], label: str) -> list[torch.Tensor]:
    from nugget_core.nugget2d import calibration_scores

    out, start = [], time.perf_counter()
    for i, ids in enumerate(segments, 1):
        # scores come back to the CPU: quantiles, histograms and JSON read them there
        out.append(calibration_scores(model, torch.tensor([ids], device=model.device)).cpu())
        if i % 32 == 0 or i == len(segments):
            rate = i / (time.perf_counter() - start)
            log.info("calibrate_threshold: %s %d/%d segments scored (%.1f/s)", label, i, len(segments), rate)
    return out


@dataclass(frozen=True)
class CalibrationConfig:
    threshold: ThresholdCalibration = section("calibrate.threshold")
    nugget2d: Nugget2DConfig = section("nugget2d")
    dtype: str = section("eval.dtype")
    seed: int = section("run.seed")


@dataclass(frozen=True)
class CalibrationInputs:
    prepared: PreparedLM
    records: LMRecords
    scorer: TrainedNugget2D = produced_by(SCORER_STAGE)


class CalibrateThreshold(Stage[CalibrationConfig, CalibrationInputs, CalibratedThreshold]):
    name = "calibrate_threshold"
    uses_device = True

    def compute(self, ctx: StageContext, config: CalibrationConfig, inputs: CalibrationInputs) -> None:
        cfg, ratio = config.threshold, config.nugget2d.ratio
        if cfg.sample_split == cfg.heldout_split:
            raise ValueError("calibrate.threshold: sample_split and heldout_split must differ (held-out text)")
        rng = np.random.default_rng(config.seed)
        data = inputs.records
        sample, heldout = [], []
        for corpus in cfg.corpora:
            path = data.segments(corpus)
            sample += _segments(path, cfg.sample_split, cfg.sample_docs, rng)
            heldout += _segments(path, cfg.heldout_split, cfg.heldout_docs, rng)

        scorer_label, scorer = inputs.scorer.scorer_source()
        log.info("calibrate_threshold: calibrating the scorer of %s", scorer_label)
        model, _ = scorer.load_from(inputs.prepared.path, ctx.device, config.dtype)
        sample_scores = _scores(model, sample, "sample")
        threshold = calibrate(sample_scores, ratio)
        heldout_scores = _scores(model, heldout, "held-out")
        per_doc = document_ratios(heldout_scores, threshold)
        pooled_sample = torch.cat(sample_scores)
        pooled_heldout = torch.cat(heldout_scores)
        metrics = {
            "lambda": threshold,
            "target_ratio": ratio,
            "sample_ratio": float((pooled_sample > threshold).float().mean()),
            "heldout_ratio_pooled": float((pooled_heldout > threshold).float().mean()),
            **spread(per_doc, "heldout_ratio"),
            "sample_tokens": float(pooled_sample.numel()),
            "heldout_tokens": float(pooled_heldout.numel()),
            "score_mean": float(pooled_sample.mean()),
            "score_std": float(pooled_sample.std()),
        }
        written = CalibratedThreshold(threshold, ratio, scorer_label, scorer_fingerprint(model),
                                      model.config.scorer_context, metrics).write(ctx.output_dir)
        with open(ctx.output_dir / "heldout_ratios.jsonl", "w") as fh:
            for ids, r in zip(heldout, per_doc, strict=True):
                fh.write(json.dumps({"tokens": len(ids), "ratio": r}) + "\n")
        histogram_png(pooled_sample, threshold, ratio, cfg.bins, ctx.output_dir / "scores_hist.png")
        for path in (written, ctx.output_dir / "scores_hist.png", ctx.output_dir / "heldout_ratios.jsonl"):
            ctx.log_artifact(path)
        ctx.set_tags({"scorer_stage": scorer_label})
        # the n of each mean: heldout_ratio_* over heldout_ratio_docs documents; sample_ratio,
        # score_* over sample_tokens; heldout_ratio_pooled over heldout_tokens
        ctx.log_metrics(metrics)
        log.info("calibrate_threshold: Lambda=%.4f for r=%g; held-out ratio %.4f +- %.4f over %d docs",
                 threshold, ratio, metrics["heldout_ratio_mean"], metrics["heldout_ratio_std"], len(per_doc))
