"""A Ray worker stopped by SIGTERM exits, without a traceback, even when the signal lands
inside a finaliser.

Ray's workers handle SIGTERM (how Ray Tune stops a finished trial's actor, and how Ray
shuts workers down) by raising ``SystemExit`` from the signal handler. Python runs a
signal handler between bytecodes of whatever the main thread is doing; when that is a
weakref callback or a ``__del__`` (garbage collection, e.g. ``WeakSet._remove``), the
``SystemExit`` cannot propagate: Python prints "Exception ignored in ... Traceback (most
recent call last) ... SystemExit: 1" through ``sys.unraisablehook`` and the worker carries
on until Ray kills it. A sweep trial's actor (``run_trial``), stopped after its trial has
reported, can do that: a run that succeeds, with a traceback in its output
(docs/environment-notes.md).

`install` replaces ``sys.unraisablehook`` in the calling process with one that does what
the signal asked for, exit at once (``os._exit``: the interpreter is inside a finaliser,
with no frame to unwind to), after one line on stderr; every other unraisable exception
goes to the hook it replaced, unchanged. Call it in each process the pipeline's code runs
in: stage tasks, training workers, sweep trials.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Any

_HOOKED = "_nugget_sigterm_hook"


def exit_code(exc: BaseException) -> int:
    """The status a swallowed ``SystemExit`` asked for (1 for a non-integer code)."""
    code = getattr(exc, "code", 1)
    return code if isinstance(code, int) else 1


def make_hook(previous: Callable[[Any], object], exit_now: Callable[[int], object] = os._exit) -> Callable[[Any], None]:
    """An ``unraisablehook``: a ``SystemExit`` exits the process (``exit_now``), anything
    else goes to ``previous``."""

    def hook(unraisable: Any) -> None:
        exc = unraisable.exc_value
        if isinstance(exc, SystemExit):
            print(f"worker {os.getpid()}: exiting on a stop request (SystemExit({exc.code!r}) raised inside "
                  f"{getattr(unraisable.object, '__qualname__', unraisable.object)!s})", file=sys.stderr, flush=True)
            exit_now(exit_code(exc))
            return
        previous(unraisable)

    setattr(hook, _HOOKED, True)
    return hook


def install() -> None:
    """Route this process's unraisable ``SystemExit`` to an exit (module docstring).
    Idempotent."""
    if not getattr(sys.unraisablehook, _HOOKED, False):
        sys.unraisablehook = make_hook(sys.unraisablehook)
