"""`stages.training.batches.BatchSchedule`: deterministic, resumable, lockstep batches, and
length grouping (``train.<job>.group_by_length``)."""

from __future__ import annotations

import numpy as np
import pytest

from stages.training.batches import GROUP_WINDOW, BatchSchedule


def epoch_batches(schedule: BatchSchedule, epoch: int) -> list[list[int]]:
    first = epoch * schedule.steps_per_epoch
    return [schedule.indices(s) for s in range(first, first + schedule.steps_per_epoch)]


@pytest.mark.parametrize("grouped", [False, True])
def test_an_epoch_uses_each_example_at_most_once_and_ranks_stay_in_lockstep(grouped):
    n, batch, world = 1003, 8, 2
    lengths = np.random.default_rng(0).integers(1, 200, n).tolist() if grouped else None
    seen: list[int] = []
    steps = set()
    for rank in range(world):
        schedule = BatchSchedule(n, batch, rank, world, seed=3, lengths=lengths)
        steps.add(schedule.steps_per_epoch)
        batches = epoch_batches(schedule, 0)
        assert all(len(b) == batch for b in batches)
        seen += [i for b in batches for i in b]
    assert steps == {n // world // batch}  # the same number of steps on every rank
    assert len(seen) == len(set(seen)) == world * (n // world // batch) * batch


def test_plain_batches_are_the_seeded_permutation_in_order():
    schedule = BatchSchedule(100, 10, rank=1, world=2, seed=5)
    order = np.random.default_rng([5, 0]).permutation(100)[1::2]
    assert schedule.indices(0) == order[:10].tolist()
    assert schedule.indices(4) == order[40:50].tolist()
    # epoch 1 is another permutation
    assert schedule.indices(5) == np.random.default_rng([5, 1]).permutation(100)[1::2][:10].tolist()


def test_grouped_batches_cut_padding_and_stay_a_pure_function_of_the_step():
    rng = np.random.default_rng(1)
    lengths = rng.integers(5, 130, 3000).tolist()
    batch = 16
    grouped = BatchSchedule(3000, batch, 0, 1, seed=0, lengths=lengths)
    plain = BatchSchedule(3000, batch, 0, 1, seed=0)

    def real_share(schedule: BatchSchedule) -> float:
        batches = epoch_batches(schedule, 0)
        real = sum(lengths[i] for b in batches for i in b)
        return real / sum(max(lengths[i] for i in b) * len(b) for b in batches)

    assert real_share(plain) < 0.6 < 0.95 < real_share(grouped)
    # the same examples in the epoch, in another arrangement
    assert sorted(sum(epoch_batches(grouped, 0), [])) == sorted(sum(epoch_batches(plain, 0), []))
    # a resumed run (fresh schedule, same arguments) sees the same batch at any step
    again = BatchSchedule(3000, batch, 0, 1, seed=0, lengths=lengths)
    for step in (0, 7, grouped.steps_per_epoch + 3):
        assert again.indices(step) == grouped.indices(step)
    # the windows' batches are shuffled: lengths do not fall monotonically through a window
    firsts = [max(lengths[i] for i in grouped.indices(s)) for s in range(GROUP_WINDOW)]
    assert firsts != sorted(firsts, reverse=True)


def test_lengths_must_match_the_examples():
    with pytest.raises(ValueError, match="group_by_length: 9 lengths for 10 examples"):
        BatchSchedule(10, 2, 0, 1, seed=0, lengths=[1] * 9)


def test_a_job_grouping_by_length_is_refused_for_a_task_without_lengths():
    from types import SimpleNamespace

    from stages.restorable.restoration_task import RestorationTask
    from stages.restorable.retrieval_task import RetrievalTask
    from stages.training.launch import check_task

    job = SimpleNamespace(group_by_length=True)
    check_task(RestorationTask.__new__(RestorationTask), job)  # defines example_length
    with pytest.raises(ValueError, match="RetrievalTask defines no example_length"):
        check_task(RetrievalTask.__new__(RetrievalTask), job)
    check_task(RetrievalTask.__new__(RetrievalTask), SimpleNamespace(group_by_length=False))
