"""profile=tiny's short Nugget2D runs must be long enough to improve on their untrained start
(a smoke run may not end with a dev loss above its untrained start).

Adam moves each weight by about lr per step, so the lr summed over a run ("travel") bounds
how far a model can get from its initialisation; these tests hold each job to the travel it
was measured to need."""

from __future__ import annotations

from typing import Any

from stages.config import load_config
from stages.training.loop import lr_at

# train_nugget2d, dev loss on 32 dev rows: the untrained scorer keeps the first document token
# in none of them, and that token is SmolLM2's attention sink: adding it to the untrained
# nuggets takes the dev loss from 4.82 to 3.51. Travel 2.2e-3 (lr 2e-4) left the loss at 4.82,
# 5.5e-3 (lr 5e-4) ended at 3.77, and at lr 1e-3 the selection had changed after 8.0e-3 (3.45).
SCORER_TRAVEL = 8e-3
# train_nugget2d_ae, ICAE at r = 0.1, 16 dev windows: its first updates raise the loss at every
# lr tried (5.19 -> 5.9); travel 6.0e-3 (lr 1e-3) ended at 5.16, 1.2e-2 (lr 2e-3) at 4.45.
ICAE_TRAVEL = 1.2e-2


def travel(job: Any) -> float:
    return sum(lr_at(step, job) for step in range(job.max_steps))


def test_tiny_compressor_run_moves_its_scorer_far_enough_to_learn_its_selection():
    job = load_config([]).train.nugget2d
    assert travel(job) >= SCORER_TRAVEL, (
        f"train.nugget2d (tiny): lr summed over its {job.max_steps} steps is {travel(job):.2g}; the scorer "
        f"needs {SCORER_TRAVEL:g} to learn to keep the attention sink")


def test_tiny_autoencoding_run_gets_icae_past_its_first_updates():
    job = load_config([]).train.nugget2d_ae
    assert travel(job) >= ICAE_TRAVEL * (1 - 1e-9), (
        f"train.nugget2d_ae (tiny): lr summed over its {job.max_steps} steps is {travel(job):.2g}; ICAE "
        f"needed {ICAE_TRAVEL:g} to end below its untrained dev loss")
