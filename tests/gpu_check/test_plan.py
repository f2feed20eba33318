"""The plan of a lent GPU window keeps every limit of the machine (benchmarks/gpu_check/limits.py)."""

from __future__ import annotations

import pytest

from benchmarks.gpu_check.calls import CARRIES, OWN_MACHINE, all_calls, window
from benchmarks.gpu_check.limits import (
    CARRY_PATHS,
    COMMAND_CHARS,
    LENT_S,
    MAX_CALLS,
    MIB,
    PLAN_BUDGET_S,
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
        folder = tmp_path / name
        folder.mkdir(parents=True)
        with (folder / "part").open("wb") as f:
            f.truncate(int(size * MIB))
        sizes[name] = folder_bytes(folder)
    return {"repo_bytes": int(5.3 * MIB), "carry_bytes": sizes, "errors": []}


def test_the_window_keeps_every_limit_within_13_minutes(tmp_path):
    calls, rotation = window(tmp_path)  # no results: nothing ran yet
    sizes = fake_pack(tmp_path, {"carry1": 54.0, "carry2": 54.0})
    assert plan_errors(calls, sizes) == []
    assert len(calls) == MAX_CALLS == 2
    assert device_seconds(calls) <= PLAN_BUDGET_S <= LENT_S - 120
    for call in calls:
        assert len(command(call)) <= COMMAND_CHARS and f"run --call {call.number}" in command(call)
        assert len(call.carry) <= CARRY_PATHS and call.timeout_s <= TIMEOUT_S // 2  # well inside 10 minutes
        assert sum(p.seconds for p in call.parts if not p.background) <= call.budget_s < call.timeout_s
    text = render(calls, rotation, sizes)
    assert "IMMEDIATELY one after another" in text and "every limit of the device is kept" in text
    assert "give_back" in text and all(command(c) in text for c in calls)


def test_the_headline_comes_first_and_needs_nothing_but_the_image_in_call_1(tmp_path):
    (first, second), _ = window(tmp_path)
    assert [p.name for p in first.parts if not p.background] == ["gpu-info", "headline-ae"]
    assert [p.name for p in second.parts][:3] == ["gpu-info", "assemble", "headline-2d"]
    ae = next(p for p in first.parts if p.name == "headline-ae")
    assert set(ae.needs) <= {"torch", "transformers", "sacrebleu", "numpy"}
    assert all("--max-seconds" in p.argv for p in (ae, second.parts[2]))
    assert [c.carry for c in (first, second)] == [(CARRIES[0],), (CARRIES[1],)]


def test_a_carry_over_the_transfer_limit_is_refused(tmp_path):
    calls, _ = window(tmp_path)
    sizes = fake_pack(tmp_path, {"carry1": 59.5, "carry2": 10})
    errors = plan_errors(calls, sizes)
    assert len(errors) == 1 and "call 1" in errors[0] and "> 64 MiB" in errors[0]
    assert size_errors(int(3 * MIB), {"c": TRANSFER_BYTES - int(3 * MIB)}) == []
    assert size_errors(int(3 * MIB), {"c": TRANSFER_BYTES - int(3 * MIB) + 1}) != []


def _part(name: str, seconds: int, background: bool = False) -> Part:
    return Part(name, ("{py}", "-c", "pass"), seconds, name, background=background)


@pytest.mark.parametrize(("calls", "expected"), [
    (tuple(Call(n, "x", (), 100, ()) for n in range(1, 4)), "3 calls > 2"),
    ((Call(1, "x", tuple(f"c{i}" for i in range(9)), 100, ()),), "9 carried paths > 8"),
    ((Call(1, "x", (), 601, ()),), "timeout_s 601 outside 1..600"),
    ((Call(1, "x", (), 80, (_part("a", 40), _part("b", 40))),), "add up to 80 s > its budget of 65 s"),
    ((Call(1, "x", (), 100, (_part("bg", 90, background=True),)),), "background part bg limit 90 s"),
    ((Call(1, "x", (), 330, ()), Call(2, "x", (), 330, ())), "device time 850 s"),
])
def test_each_limit_is_checked(calls, expected):
    errors = plan_errors(calls)
    assert any(expected in e for e in errors), errors


def test_the_own_machine_runs_everything_the_window_rotates(tmp_path):
    calls = all_calls(tmp_path)
    names = [p.name for c in calls for p in c.parts]
    (_, second), rotation = window(tmp_path)
    assert set(r.part.name for r in rotation.chosen) | set(r.part.name for r, _ in rotation.waiting) <= set(names)
    assert {"headline-ae", "headline-2d", *(p.name for p in OWN_MACHINE.parts)} <= set(names)


def test_each_own_machine_call_holds_its_parts_limits(tmp_path):
    for call in all_calls(tmp_path):
        assert sum(p.seconds for p in call.parts if not p.background) <= call.budget_s, call.title
