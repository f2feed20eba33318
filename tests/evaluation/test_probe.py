"""The SentEval-style probe (`stages.evaluation.probe`): it learns separable data, stays at
chance on shuffled labels, and picks its L2 penalty from train / dev alone."""

from __future__ import annotations

import pytest
import torch

from stages.evaluation.probe import accuracy, choose_l2, fit_probe, stratified_folds


def blobs(n: int, classes: int, d: int = 8, seed: int = 0, spread: float = 0.3) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator(device="cpu").manual_seed(seed)
    centres = torch.randn(classes, d, generator=g, device="cpu") * 3
    y = torch.arange(n, device="cpu") % classes
    return centres[y] + spread * torch.randn(n, d, generator=g, device="cpu"), y


def test_separable_classes_are_learnt():
    x, y = blobs(120, 4)
    test_x, test_y = blobs(60, 4, seed=0)  # the same centres, other draws
    probe = fit_probe(x, y, 4, 1e-4, 100)
    assert accuracy(probe, x, y) == 1.0 and accuracy(probe, test_x, test_y) > 0.95


def test_shuffled_labels_stay_at_chance():
    x, _ = blobs(400, 4, d=16, spread=1.0)
    g = torch.Generator(device="cpu").manual_seed(1)
    y = torch.randint(0, 4, (400,), generator=g, device="cpu")
    test_y = torch.randint(0, 4, (400,), generator=g, device="cpu")
    test_x, _ = blobs(400, 4, d=16, seed=3, spread=1.0)
    assert abs(accuracy(fit_probe(x, y, 4, 1e-3, 100), test_x, test_y) - 0.25) < 0.08


def test_the_fit_is_deterministic_and_the_penalty_shrinks_weights():
    x, y = blobs(80, 3)
    a, b = fit_probe(x, y, 3, 1e-3, 50), fit_probe(x, y, 3, 1e-3, 50)
    assert torch.equal(a.weight, b.weight) and torch.equal(a.bias, b.bias)
    assert fit_probe(x, y, 3, 1.0, 50).weight.norm() < a.weight.norm()


def test_folds_are_stratified_disjoint_and_cover_train():
    y = torch.tensor([0] * 10 + [1] * 20, device="cpu")
    folds = stratified_folds(y, 5, seed=0)
    assert sorted(torch.cat(folds).tolist()) == list(range(30))
    assert all(int((y[f] == 0).sum()) == 2 and int((y[f] == 1).sum()) == 4 for f in folds)
    assert [f.tolist() for f in folds] == [f.tolist() for f in stratified_folds(y, 5, seed=0)]
    with pytest.raises(ValueError, match="folds"):
        stratified_folds(y[:3], 5, seed=0)


def test_the_penalty_is_chosen_on_dev_only():
    """Two dev splits that disagree on which penalty is best pick different penalties; the
    test rows never enter `choose_l2`, so changing them cannot change the choice."""
    x, y = blobs(60, 2, spread=2.5)
    dev_x, dev_y = blobs(60, 2, seed=5, spread=2.5)
    grid = [1e-5, 10.0]
    good = choose_l2((x, y), 2, grid, 50, True, dev=(dev_x, dev_y))
    flipped = choose_l2((x, y), 2, grid, 50, True, dev=(dev_x, 1 - dev_y))  # a dev that rewards the other probe
    assert good.selection == "dev" and set(good.scores) == set(grid)
    assert {good.l2, flipped.l2} == set(grid)  # the dev split decides
    assert all(abs(good.scores[l2] + flipped.scores[l2] - 1) < 1e-9 for l2 in grid)
    cv = choose_l2((x, y), 2, grid, 50, True, folds=3)
    assert cv.selection == "cv" and cv.scores[cv.l2] == max(cv.scores.values())
