"""Progress lines of long loops: the evaluation loops and the training loop.

Stages run inside Ray tasks, where Python logging is not configured (the root logger
has no handler, so INFO lines vanish); a stage logger gets its own stderr handler there,
and in a configured process (the driver, pytest, a Ray Train worker, whose root logger
Ray Train configures) it just propagates. Either way the line reaches the driver's log.

The training loop's line (rank 0, every ``NUGGET_PROGRESS_SECONDS`` seconds, default
:data:`PROGRESS_SECONDS`, and at the last step)::

    train_nugget r=0.1 l=3 step 120/200 loss 6.21 lr 3.0e-04 12.3k tok/s eta 40s

and two lines on whether the fit learned: its dev loss before any update, and at the end
the dev loss it started and ended with (a warning when the end is above the start)::

    train_nugget r=0.1 l=3 dev loss before training 7.12 (n = 2.0k tokens)
    train_nugget r=0.1 l=3 dev loss 7.12 -> 3.40 after 200 steps (1.6M tokens seen)
"""

from __future__ import annotations

import logging
import os
import time

PROGRESS_SECONDS = 10.0
PROGRESS_ENV = "NUGGET_PROGRESS_SECONDS"


def progress_logger(name: str) -> logging.Logger:
    log = logging.getLogger(name)
    log.setLevel(logging.INFO)
    if not logging.getLogger().handlers and not log.handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        log.addHandler(handler)
        log.propagate = False
    return log


def _si(value: float) -> str:
    """``12345`` -> ``12.3k``, ``950`` -> ``950``, ``2.5e6`` -> ``2.5M``."""
    for scale, unit in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if value >= scale:
            return f"{value / scale:.1f}{unit}"
    return f"{value:.0f}"


def fmt_duration(seconds: float) -> str:
    """``75`` -> ``1m15s``, ``3725`` -> ``1h02m``, ``9`` -> ``9s``."""
    s = max(0, int(round(seconds)))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"


def train_progress_line(label: str, step: int, max_steps: int, loss: float, lr: float,
                        tokens_per_s: float, eta_s: float | None) -> str:
    """One training progress line (pure: the format users read in the driver log)."""
    eta = "?" if eta_s is None else fmt_duration(eta_s)
    return (f"{label} step {step}/{max_steps} loss {loss:.2f} lr {lr:.1e} "
            f"{_si(tokens_per_s)} tok/s eta {eta}")


def initial_dev_loss_line(label: str, dev_loss: float, n_tokens: int) -> str:
    """The line of a fit's step-0 dev evaluation (before any update)."""
    return f"{label} dev loss before training {dev_loss:.2f} (n = {_si(n_tokens)} tokens)"


def dev_loss_rose(before: float, after: float) -> bool:
    """Whether training left the dev loss above its untrained start (a non-finite end
    counts): the fit made the model worse."""
    return not after <= before


def learning_line(label: str, before: float, after: float, steps: int, tokens_seen: int) -> str:
    """The line of a fit's end: its dev loss before training and of the weights it exported."""
    worse = ": above its untrained start" if dev_loss_rose(before, after) else ""
    return (f"{label} dev loss {before:.2f} -> {after:.2f} after {steps} steps "
            f"({_si(tokens_seen)} tokens seen){worse}")


def progress_seconds() -> float:
    """The interval between training progress lines: ``$NUGGET_PROGRESS_SECONDS`` or 10 s."""
    raw = os.environ.get(PROGRESS_ENV, "")
    try:
        value = float(raw) if raw else PROGRESS_SECONDS
    except ValueError:
        raise ValueError(f"{PROGRESS_ENV}={raw!r}: must be a number of seconds") from None
    if value < 0:
        raise ValueError(f"{PROGRESS_ENV}={raw!r}: must be >= 0")
    return value


class TrainProgress:
    """Rank 0's periodic training line: :meth:`step` after each optimiser step prints when
    ``every`` seconds have passed since the last line, and always at the last step."""

    def __init__(self, label: str, max_steps: int, first_step: int, every: float,
                 log: logging.Logger | None = None) -> None:
        self.label, self.max_steps, self.every = label, max_steps, every
        self.log = log or progress_logger("nugget.train")
        self.started = self.last = time.time()
        self.first_step = first_step  # a resumed run's speed counts only its own steps
        self.tokens = 0.0

    def step(self, step: int, loss: float, lr: float, tokens: float) -> str | None:
        """Account one step of ``tokens``; the line if one is due (also logged)."""
        self.tokens += tokens
        now = time.time()
        if now - self.last < self.every and step < self.max_steps:
            return None
        done = step - self.first_step
        eta = (self.max_steps - step) * (now - self.started) / done if done > 0 else None
        line = train_progress_line(self.label, step, self.max_steps, loss, lr,
                                   self.tokens / max(now - self.last, 1e-9), eta)
        self.last, self.tokens = now, 0.0
        self.log.info(line)
        return line


class LoopProgress:
    """A periodic line of a loop over ``total`` items (documents, requests)::

        eval_harness full: 5/16 documents, 1m02s, eta 2m15s

    :meth:`advance` after each item logs when ``every`` seconds (default `progress_seconds`) have
    passed since the last line, and always after the last item."""

    def __init__(self, label: str, total: int, unit: str, log: logging.Logger, every: float | None = None) -> None:
        self.label, self.total, self.unit, self.log = label, total, unit, log
        self.every = progress_seconds() if every is None else every
        self.started = self.last = time.time()
        self.done = 0

    def advance(self, n: int = 1) -> str | None:
        """Account ``n`` finished items; the line if one is due (also logged)."""
        self.done += n
        now = time.time()
        if now - self.last < self.every and self.done < self.total:
            return None
        elapsed = now - self.started
        eta = elapsed / self.done * (self.total - self.done) if self.done else 0.0
        line = (f"{self.label}: {self.done}/{self.total} {self.unit}, {fmt_duration(elapsed)}, "
                f"eta {fmt_duration(eta)}")
        self.last = now
        self.log.info(line)
        return line
