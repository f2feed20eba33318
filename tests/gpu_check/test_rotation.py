"""Whose turn it is: the rotating checks that never ran to the end, then the oldest, go first."""

from __future__ import annotations

import json

from benchmarks.gpu_check.calls import rotation_slot_s
from benchmarks.gpu_check.parts import Part
from benchmarks.gpu_check.rotation import ROTATING, choose, last_ok, order


def window_result(root, date: str, statuses: dict[str, str]) -> None:
    folder = root / date / "call2"
    folder.mkdir(parents=True)
    parts = [{"part": name, "status": status} for name, status in statuses.items()]
    (folder / "status.json").write_text(json.dumps({"call": 2, "parts": parts}))


def part(name: str, seconds: int) -> Part:
    return Part(name, ("{py}",), seconds, name)


def test_never_run_first_then_oldest_ties_by_priority(tmp_path):
    window_result(tmp_path, "2026-12-01", {"a": "ok", "b": "ok"})
    window_result(tmp_path, "2026-12-03", {"a": "ok", "c": "failed"})  # c failed: never ran to the end
    parts = (part("a", 10), part("b", 10), part("c", 10), part("d", 10))
    assert last_ok(tmp_path) == {"a": "2026-12-03", "b": "2026-12-01"}
    assert [r.part.name for r in order(parts, tmp_path)] == ["c", "d", "b", "a"]


def test_the_slot_takes_what_fits_in_turn_and_says_why_the_rest_waits(tmp_path):
    parts = (part("big", 50), part("small", 20), part("tiny", 5))
    rotation = choose(parts, 30, tmp_path)
    assert [r.part.name for r in rotation.chosen] == ["small", "tiny"]
    assert [(r.part.name, why) for r, why in rotation.waiting] == [("big", "needs 50 s, 30 s left: a later window")]
    assert any("runs now:  small" in line for line in rotation.lines())


def test_successive_windows_cover_every_rotating_check(tmp_path):
    seen = []
    for day in range(1, len(ROTATING) + 1):
        rotation = choose(ROTATING, rotation_slot_s(), tmp_path)
        assert rotation.chosen, f"window {day}: nothing fits call 2's {rotation_slot_s()} s"
        ran = {r.part.name: "ok" for r in rotation.chosen}
        seen += ran
        window_result(tmp_path, f"2026-12-{day:02d}", ran)
    assert set(seen) == {p.name for p in ROTATING}
