"""The pieces the burst's timing rests on: the budget, the schedule, the batch order."""

from __future__ import annotations

import pytest

from benchmarks.headline.budget import Deadline, scoring_estimate, share_seconds
from benchmarks.headline.loop import epoch_sampler, lr_factor, thin
from tests.headline.micro import LOOP


def test_deadline_refuses_work_that_cannot_finish():
    assert Deadline(None).allows(1e9)
    d = Deadline(100.0, started=0.0)  # started long ago on the monotonic clock: nothing is left
    assert d.left() < 0 and not d.allows(0.0)
    assert scoring_estimate([], 7.0) == 7.0 and scoring_estimate([4.0, 8.0], 7.0) == pytest.approx(12.0)


def test_a_shared_budget_fits_every_unit_and_stays_within_cap_and_floor():
    per = share_seconds(223.0, 3, 63.0, cap=70.0, floor=20.0)
    assert 3 * per + 63.0 <= 223.0 and per == pytest.approx(0.98 * 160 / 3)
    assert share_seconds(1e4, 3, 63.0, cap=70.0, floor=20.0) == 70.0
    assert share_seconds(50.0, 3, 63.0, cap=70.0, floor=20.0) == 20.0
    assert share_seconds(float("inf"), 2.4, 38.0, cap=60.0, floor=15.0) == 60.0


def test_schedule_warms_up_then_anneals_to_its_floor():
    loop = LOOP.__class__(**{**LOOP.__dict__, "warmup_steps": 10, "min_lr_fraction": 0.1})
    assert lr_factor(0, 0.0, loop) == pytest.approx(0.1)
    assert lr_factor(9, 0.0, loop) == pytest.approx(1.0)
    assert lr_factor(50, 0.5, loop) == pytest.approx(0.55)
    assert lr_factor(99, 1.0, loop) == pytest.approx(0.1) == lr_factor(99, 3.0, loop)


def test_batches_are_a_function_of_the_step_and_cover_each_epoch():
    pick = epoch_sampler(10, 4, seed=3)
    first = [pick(s) for s in range(5)]
    assert first == [epoch_sampler(10, 4, seed=3)(s) for s in range(5)]
    flat = [i for b in first for i in b]
    assert sorted(flat[:10]) == list(range(10)) and sorted(flat[10:20]) == list(range(10))
    assert first != [epoch_sampler(10, 4, seed=4)(s) for s in range(5)]


def test_thin_keeps_the_ends():
    curve = [[i, i, float(i)] for i in range(100)]
    kept = thin(curve, 7)
    assert len(kept) == 7 and kept[0] == curve[0] and kept[-1] == curve[-1]
