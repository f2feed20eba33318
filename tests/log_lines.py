"""A logging handler that keeps each record's message, for tests that read what a logger said
without pytest's function-scoped ``caplog`` (module fixtures, loggers that do not propagate)."""

from __future__ import annotations

import logging


class LogLines(logging.Handler):
    """Keeps the message of every record at ``level`` or above in ``messages``."""

    def __init__(self, level: int = logging.INFO) -> None:
        super().__init__(level)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())
