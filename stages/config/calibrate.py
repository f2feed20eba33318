"""Config sections of the calibration stages (``calibrate.*``); see :mod:`stages.config.schema`."""

from __future__ import annotations

from dataclasses import dataclass

from stages.config.validate import spec
from stages.nugget2d.config import ThresholdCalibration


@dataclass
class CalibrateSection:
    threshold: ThresholdCalibration = spec(ThresholdCalibration(), help="calibrate_threshold stage.")
