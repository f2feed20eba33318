"""One difference between a paper's setup and this run's (`stages.report.deviations` lists them)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

Config = Callable[[str], Any]  # a config path -> its section (the report's ReportConfig by path)


@dataclass(frozen=True)
class Deviation:
    setting: str  # what, in the config's words
    paper: str  # the papers' setting (with its section)
    here: str  # this run's setting and why
