"""A SystemExit raised inside a finaliser (where Ray's SIGTERM handler can land) exits the
worker without a traceback (`stages.framework.sigterm`)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path
from types import SimpleNamespace

from stages.framework.sigterm import exit_code, make_hook

# a weakref callback raising SystemExit, as Ray's SIGTERM handler does when the signal
# arrives while the main thread runs a WeakSet's _remove; "after" shows whether it carried on
FINALISER = textwrap.dedent("""
    import sys, weakref
    {install}
    class Thing: pass
    def stop(_ref):
        raise SystemExit(1)
    thing = Thing()
    ref = weakref.ref(thing, stop)
    del thing
    print("after", flush=True)
""")


def _run(install: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", FINALISER.format(install=install)], capture_output=True,
                          text=True, timeout=60, cwd=Path(__file__).resolve().parents[2])


def test_without_the_hook_python_prints_a_traceback_and_carries_on():
    plain = _run("")
    assert "Traceback (most recent call last)" in plain.stderr and "SystemExit" in plain.stderr
    assert plain.stdout == "after\n" and plain.returncode == 0


def test_with_the_hook_the_process_exits_at_once_without_a_traceback():
    hooked = _run("from stages.framework.sigterm import install; install(); install()")
    assert "Traceback" not in hooked.stderr
    assert "exiting on a stop request (SystemExit(1)" in hooked.stderr
    assert hooked.stdout == "" and hooked.returncode == 1


def test_other_unraisable_exceptions_reach_the_previous_hook():
    seen, exits = [], []
    hook = make_hook(seen.append, exits.append)
    other = SimpleNamespace(exc_value=ValueError("x"), object=None)
    hook(other)
    assert seen == [other] and exits == []
    hook(SimpleNamespace(exc_value=SystemExit("bye"), object=None))
    assert exits == [1] and exit_code(SystemExit(3)) == 3
