"""Config sections of the calibration stages (``calibrate.*``); see :mod:`stages.config.schema`."""

from __future__ import annotations

from dataclasses import dataclass

from stages.config.validate import spec

LM_CORPORA = ("wiki", "pile")  # build_lm's lm_<corpus>.parquet
SPLITS = ("train", "dev", "test")


@dataclass
class ThresholdCalibration:
    """calibrate_threshold (Nugget2D §2.5): Lambda = (1 - r) quantile, r = nugget2d.ratio."""

    corpora: list[str] = spec(["wiki", "pile"], help="LM corpora sampled.", choices=LM_CORPORA, nonempty=True)
    sample_split: str = spec("train", help="Split Lambda is estimated on.", choices=SPLITS)
    heldout_split: str = spec("test", help="Split the realised ratio is reported on.", choices=SPLITS)
    sample_docs: int = spec(256, help="Sampled segments (documents) per corpus for Lambda.", ge=1)
    heldout_docs: int = spec(128, help="Held-out segments per corpus for the realised ratio.", ge=1)
    bins: int = spec(50, help="Bins of the score histogram.", ge=5)

    def cross_field_errors(self) -> list[str]:
        if self.sample_split == self.heldout_split:
            return [f"heldout_split: value {self.heldout_split!r} must differ from sample_split (held-out text)"]
        return []


@dataclass
class CalibrateSection:
    threshold: ThresholdCalibration = spec(ThresholdCalibration(), help="calibrate_threshold stage.")
