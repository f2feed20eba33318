"""The ``calibrate.*`` section: where the calibration stage's section sits (Nugget2D's,
`stages.nugget2d.config.ThresholdCalibration`); see :mod:`stages.config.schema`."""

from __future__ import annotations

from dataclasses import dataclass

from stages.config.validate import spec
from stages.nugget2d.config import ThresholdCalibration


@dataclass
class CalibrateSection:
    threshold: ThresholdCalibration = spec(ThresholdCalibration(), help="calibrate_threshold stage.")
