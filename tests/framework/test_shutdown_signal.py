"""`sigterm_as_exit` / `raise_if_stopped`: a SIGTERM whose SystemExit Python dropped (the
handler ran inside a finalizer) still stops the driver's scheduling loop."""

from __future__ import annotations

import os
import signal
import sys

import pytest

from stages.framework.shutdown import raise_if_stopped, sigterm_as_exit


class _Finalised:
    def __del__(self) -> None:
        # the handler runs at the next bytecode, still inside __del__: its raise is "ignored"
        os.kill(os.getpid(), signal.SIGTERM)
        for _ in range(3):
            pass


def test_a_sigterm_lost_in_a_finalizer_is_raised_again(monkeypatch):
    lost: list[type[BaseException] | None] = []
    monkeypatch.setattr(sys, "unraisablehook", lambda info: lost.append(info.exc_type))
    with pytest.raises(SystemExit) as stopped:
        with sigterm_as_exit():
            _Finalised()  # dropped at once: __del__ runs here
            assert lost == [SystemExit]  # the handler's own raise was dropped ("Exception ignored in")
            raise_if_stopped()
    assert stopped.value.code == 128 + signal.SIGTERM


def test_nothing_is_pending_outside_a_stop_or_after_the_context():
    raise_if_stopped()
    with pytest.raises(SystemExit):
        with sigterm_as_exit():
            os.kill(os.getpid(), signal.SIGTERM)
            for _ in range(3):
                pass
    raise_if_stopped()  # the context's end forgets the signal: a later loop is not stopped by it
