"""Contract of the calibration group's output: the autoregressive threshold Lambda."""

from __future__ import annotations

from dataclasses import dataclass
from dataclasses import field as dc_field
from pathlib import Path
from typing import Any, ClassVar

from stages.artifacts.base import field, locate, write_json
from stages.framework.stage import Artifact


@dataclass(frozen=True)
class CalibratedThreshold:
    """``calibrate_threshold``: ``threshold.json``, the one place downstream
    autoregressive stages take Lambda from: Lambda, the ratio r it was calibrated for, which
    stage's scorer it was calibrated on (and that scorer's fingerprint and window), and
    the calibration's measurements."""

    STAGE: ClassVar[str] = "calibrate_threshold"
    FILE: ClassVar[str] = "threshold.json"
    threshold: float  # Lambda
    ratio: float
    scorer_stage: str
    scorer_fingerprint: str
    scorer_window: int
    metrics: dict[str, float] = dc_field(default_factory=dict)

    def write(self, out: Path) -> Path:
        return write_json(out / self.FILE, {
            "lambda": self.threshold, "ratio": self.ratio, "scorer_stage": self.scorer_stage,
            "scorer_fingerprint": self.scorer_fingerprint, "scorer_window": self.scorer_window,
            "metrics": self.metrics,
        })

    @classmethod
    def read(cls, source: Artifact | Path | str) -> CalibratedThreshold:
        where = locate(source, cls.STAGE)
        raw: Any = where.json(cls.FILE)
        return cls(
            threshold=field(where, cls.FILE, raw, "lambda", float),
            ratio=field(where, cls.FILE, raw, "ratio", float),
            scorer_stage=field(where, cls.FILE, raw, "scorer_stage", str),
            scorer_fingerprint=field(where, cls.FILE, raw, "scorer_fingerprint", str),
            scorer_window=field(where, cls.FILE, raw, "scorer_window", int),
            metrics=field(where, cls.FILE, raw, "metrics", dict, default={}),
        )
