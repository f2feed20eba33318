"""Progress lines of the long evaluation loops.

Stages run inside Ray tasks, where Python logging is not configured (the root logger
has no handler, so INFO lines vanish); a stage logger gets its own stderr handler there,
and in a configured process (the driver, pytest) it just propagates.
"""

from __future__ import annotations

import logging


def progress_logger(name: str) -> logging.Logger:
    log = logging.getLogger(name)
    log.setLevel(logging.INFO)
    if not logging.getLogger().handlers and not log.handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        log.addHandler(handler)
        log.propagate = False
    return log
