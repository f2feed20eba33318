"""The plan of a GPU check keeps every limit of the lent machine (benchmarks/gpu_check/limits.py)."""

from __future__ import annotations

import pytest

from benchmarks.gpu_check.calls import CALLS, CARRIES
from benchmarks.gpu_check.limits import (
    BUDGET_S,
    CARRY_PATHS,
    COMMAND_CHARS,
    MAX_CALLS,
    MIB,
    TIMEOUT_S,
    TRANSFER_BYTES,
)
from benchmarks.gpu_check.pack import folder_bytes, size_errors
from benchmarks.gpu_check.parts import Call, Part
from benchmarks.gpu_check.plan import command, device_seconds, plan_errors, render


def fake_pack(tmp_path, mib: dict[str, float]) -> dict:
    """Carry folders of the given sizes (sparse files) and the sizes as `pack` records them."""
    sizes = {}
    for name, size in mib.items():
        folder = tmp_path / name / "wheels"
        folder.mkdir(parents=True)
        with (folder / "x-1.0-py3-none-any.whl").open("wb") as f:
            f.truncate(int(size * MIB))
        sizes[name] = folder_bytes(tmp_path / name)
    return {"repo_bytes": int(3 * MIB), "carry_bytes": sizes, "errors": []}


def test_the_plan_keeps_every_limit(tmp_path):
    sizes = fake_pack(tmp_path, {"carry1": 46.2, "carry2": 46.2, "carry3": 25.6})
    assert plan_errors(CALLS, sizes) == []
    assert len(CALLS) <= MAX_CALLS
    assert device_seconds(CALLS) <= BUDGET_S
    for call in CALLS:
        assert len(command(call)) <= COMMAND_CHARS and f"run --call {call.number}" in command(call)
        assert len(call.carry) <= CARRY_PATHS and call.timeout_s <= TIMEOUT_S
        assert sum(p.seconds for p in call.parts if not p.background) <= call.budget_s < call.timeout_s
    # calls 2 and 3 use what call 1 installed: the plan says to issue them back to back
    text = render(CALLS, sizes)
    assert "IMMEDIATELY one after another" in text and "every limit of the device is kept" in text
    assert all(command(c) in text for c in CALLS)


def test_a_carry_over_the_transfer_limit_is_refused(tmp_path):
    sizes = fake_pack(tmp_path, {"carry1": 61.5, "carry2": 10, "carry3": 10})
    errors = plan_errors(CALLS, sizes)
    assert len(errors) == 1 and "call 1" in errors[0] and "> 64 MiB" in errors[0]
    assert size_errors(int(3 * MIB), {"carry2": TRANSFER_BYTES - int(3 * MIB)}) == []
    assert size_errors(int(3 * MIB), {"carry2": TRANSFER_BYTES - int(3 * MIB) + 1}) != []


def _part(name: str, seconds: int, background: bool = False) -> Part:
    return Part(name, ("{py}", "-c", "pass"), seconds, name, background=background)


@pytest.mark.parametrize(("calls", "expected"), [
    (tuple(Call(n, "x", (), 100, ()) for n in range(1, 5)), "4 calls > 3"),
    ((Call(1, "x", tuple(f"c{i}" for i in range(9)), 100, ()),), "9 carried paths > 8"),
    ((Call(1, "x", (), 601, ()),), "timeout_s 601 outside 1..600"),
    ((Call(1, "x", (), 100, (_part("a", 40), _part("b", 40))),), "add up to 80 s > its budget of 70 s"),
    ((Call(1, "x", (), 100, (_part("bg", 90, background=True),)),), "background part bg limit 90 s"),
    (tuple(Call(n, "x", (), 600, ()) for n in (1, 2, 3)), "device time 1920 s"),
])
def test_each_limit_is_checked(calls, expected):
    errors = plan_errors(calls)
    assert any(expected in e for e in errors), errors


def test_each_call_carries_its_own_carry():
    assert [c.carry for c in CALLS] == [(CARRIES[0],), (CARRIES[1],), (CARRIES[2],)]
    # call 1's benchmarks run before anything is installed: nothing but the image's packages
    bench = [p for p in CALLS[0].parts if p.argv[1].startswith("benchmarks/")]
    assert bench and all(set(p.needs) <= {"torch", "transformers", "peft"} for p in bench)
    assert all("--max-seconds" in p.argv and "--results-dir" in p.argv for p in bench)
