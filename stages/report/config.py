"""Config section of the report stage (``report``)."""

from __future__ import annotations

from dataclasses import dataclass

from stages.config.validate import spec


@dataclass
class ReportSection:
    title: str = spec("nugget-pipeline report", help="Title of the report artifact.")
