"""profile=tiny's compressor run must be long enough to change what its scorer selects
(issue 33, item 4: the smoke run may not end with a dev loss above its untrained start)."""

from __future__ import annotations

from stages.config import load_config
from stages.train.loop import lr_at

# Measured on train_nugget2d at profile=tiny (dev loss on 32 dev rows): the untrained scorer
# keeps the first document token in none of them, and that token is SmolLM2's attention sink:
# adding it to the untrained nuggets takes the dev loss from 4.82 to 3.51. Adam moves each
# scorer weight by about lr per step, so the lr summed over a run bounds how far the scorer
# can move: 2.2e-3 (lr 2e-4, 20 steps) left the loss at 4.82, 5.5e-3 (lr 5e-4) ended at 3.77,
# and at lr 1e-3 the selection had changed after 8.0e-3 (step 10: 3.45).
SCORER_TRAVEL = 8e-3


def test_tiny_compressor_run_moves_its_scorer_far_enough_to_learn_its_selection():
    job = load_config([]).train.nugget2d
    travel = sum(lr_at(step, job) for step in range(job.max_steps))
    assert travel >= SCORER_TRAVEL, (
        f"train.nugget2d (tiny): lr summed over its {job.max_steps} steps is {travel:.2g}; the scorer needs "
        f"{SCORER_TRAVEL:g} to learn to keep the attention sink")
