"""A part: one command of a call, run as its own subprocess with its own time limit.

``argv`` holds placeholders filled in when the part starts (`Placeholders`): ``{py}`` the
Python running the check, ``{dir}`` the part's own output folder, ``{max_seconds}`` the
seconds it may use before it should stop starting new work (its time limit less a grace
for writing what it has), and the paths of the run: ``{site}``, ``{sources}``,
``{scratch}`` (what one call leaves in /tmp for the next), ``{carry1}``, ``{carry2}``,
and the sizes the run is at: ``{size}`` (``gpu`` in the window, ``cpu`` in its CPU
rehearsal) and ``{device}`` (``cuda`` / ``cpu``); ``by_size`` appends arguments that
differ between the two (a benchmark's GPU shape and its CPU stand-in). A part that needs
modules (``needs``) or paths (``needs_paths``) is not started without them: its status
says what is missing.
"""

from __future__ import annotations

from dataclasses import dataclass, field

GRACE_S = 30  # of a part's limit, kept for writing its results after --max-seconds


@dataclass(frozen=True)
class Part:
    name: str
    argv: tuple[str, ...]
    seconds: int  # its time limit (also capped by what is left of the call's budget)
    what: str  # one line for the plan and the summary
    needs: tuple[str, ...] = ()  # importable modules, checked in the part's environment
    needs_paths: tuple[str, ...] = ()  # placeholders allowed
    background: bool = False  # runs beside the parts after it; the call waits for it at its end
    after: tuple[str, ...] = ()  # background parts that must have finished first
    nice: int = 0  # a background install should not steal a benchmark's CPU
    install: bool = False  # installs a carry: left out where everything is installed (--all)
    env: dict[str, str] = field(default_factory=dict)
    by_size: dict[str, tuple[str, ...]] = field(default_factory=dict)  # {"gpu": (...), "cpu": (...)}

    def command(self, values: dict[str, str]) -> list[str]:
        extra = self.by_size.get(values.get("size", "gpu"), ())
        return [arg.format(**values) for arg in (*self.argv, *extra)]


@dataclass(frozen=True)
class Call:
    """One remote command: the parts it runs, the carried folders, its tool timeout."""

    number: int
    title: str
    carry: tuple[str, ...]
    timeout_s: int
    parts: tuple[Part, ...]

    @property
    def budget_s(self) -> int:
        from benchmarks.gpu_check.limits import CALL_RESERVE_S

        return self.timeout_s - CALL_RESERVE_S
