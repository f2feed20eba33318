"""A linear probe on frozen embeddings, as SentEval evaluates sentence embeddings (Conneau &
Kiela 2018): multinomial logistic regression with an L2 penalty, its strength picked from a
grid on a dev split, or by stratified k-fold cross-validation on train where a task publishes
no dev split (SentEval's TREC), then refitted on the whole train split and scored on test.

The fit is full-batch L-BFGS (strong Wolfe line search) from zeros in float64, so it is
deterministic: a pure function of the embeddings, the labels and the settings. The loss is
the mean cross-entropy plus ``l2 * ||W||^2`` (the bias is not penalised). Test rows never
reach the choice of the penalty: `choose_l2` sees train (and dev) only.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class Probe:
    """A fitted probe: ``[d, classes]`` weights and ``[classes]`` bias, and the standardisation
    (train mean / std per dimension; zeros / ones without it) applied before them."""

    weight: torch.Tensor
    bias: torch.Tensor
    mean: torch.Tensor
    std: torch.Tensor

    def scores(self, x: torch.Tensor) -> torch.Tensor:
        """``[n, classes]`` logits of embeddings ``x [n, d]``."""
        return ((x.double() - self.mean) / self.std) @ self.weight + self.bias

    def predict(self, x: torch.Tensor) -> torch.Tensor:
        return self.scores(x).argmax(1)


def fit_probe(x: torch.Tensor, y: torch.Tensor, classes: int, l2: float, max_iter: int,
              standardize: bool = True) -> Probe:
    """The probe of embeddings ``x [n, d]`` with labels ``y [n]`` (0 .. classes - 1)."""
    if x.shape[0] != y.shape[0] or x.shape[0] == 0:
        raise ValueError(f"fit_probe: {x.shape[0]} embeddings for {y.shape[0]} labels")
    x = x.double()
    mean = x.mean(0) if standardize else torch.zeros(x.shape[1], dtype=x.dtype, device=x.device)
    std = x.std(0, unbiased=False).clamp_min(1e-8) if standardize else torch.ones_like(mean)
    z = (x - mean) / std
    weight = torch.zeros(x.shape[1], classes, dtype=x.dtype, device=x.device, requires_grad=True)
    bias = torch.zeros(classes, dtype=x.dtype, device=x.device, requires_grad=True)
    optimizer = torch.optim.LBFGS([weight, bias], max_iter=max_iter, line_search_fn="strong_wolfe",
                                  tolerance_grad=1e-9, tolerance_change=1e-12, history_size=20)

    def closure() -> torch.Tensor:
        optimizer.zero_grad()
        loss = torch.nn.functional.cross_entropy(z @ weight + bias, y) + l2 * weight.pow(2).sum()
        loss.backward()
        return loss

    with torch.enable_grad():
        optimizer.step(closure)
    return Probe(weight.detach(), bias.detach(), mean, std)


def accuracy(probe: Probe, x: torch.Tensor, y: torch.Tensor) -> float:
    """Share (0-1) of ``y`` the probe predicts."""
    return float((probe.predict(x) == y).double().mean())


def stratified_folds(y: torch.Tensor, folds: int, seed: int) -> list[torch.Tensor]:
    """``folds`` disjoint index sets covering ``y``, each holding every class in proportion
    (a seeded shuffle per class, dealt round-robin: scikit-learn's StratifiedKFold, as SentEval)."""
    if folds > y.shape[0]:
        raise ValueError(f"stratified_folds: {folds} folds for {y.shape[0]} examples")
    generator = torch.Generator().manual_seed(seed)
    parts: list[list[int]] = [[] for _ in range(folds)]
    dealt = 0
    for label in torch.unique(y.cpu()).tolist():
        members = torch.nonzero(y.cpu() == label).flatten()
        for i in members[torch.randperm(len(members), generator=generator, device="cpu")].tolist():
            parts[dealt % folds].append(i)
            dealt += 1
    return [torch.tensor(sorted(p), dtype=torch.long, device="cpu") for p in parts]


@dataclass(frozen=True)
class Choice:
    """The L2 penalty picked and the selection accuracy (0-1) of each penalty of the grid."""

    l2: float
    scores: dict[float, float]
    selection: str  # "dev" | "cv"


def choose_l2(train: tuple[torch.Tensor, torch.Tensor], classes: int, grid: Sequence[float], max_iter: int,
              standardize: bool, dev: tuple[torch.Tensor, torch.Tensor] | None = None, folds: int = 5,
              seed: int = 0) -> Choice:
    """The penalty of ``grid`` with the best dev accuracy (``dev`` given) or the best mean accuracy
    over ``folds`` stratified folds of ``train``; ties go to the first in grid order."""
    x, y = train
    scores: dict[float, float] = {}
    if dev is not None:
        for l2 in grid:
            scores[l2] = accuracy(fit_probe(x, y, classes, l2, max_iter, standardize), *dev)
    else:
        parts = stratified_folds(y, folds, seed)
        for l2 in grid:
            fold_scores = []
            for k, held in enumerate(parts):
                rest = torch.cat([p for j, p in enumerate(parts) if j != k]).to(x.device)
                held = held.to(x.device)
                fold_scores.append(accuracy(fit_probe(x[rest], y[rest], classes, l2, max_iter, standardize),
                                            x[held], y[held]))
            scores[l2] = sum(fold_scores) / len(fold_scores)
    best = max(scores.values())
    return Choice(next(l2 for l2 in grid if scores[l2] == best), scores, "dev" if dev is not None else "cv")
