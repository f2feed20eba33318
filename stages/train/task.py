"""What every training task shares: the loss/logits calls the loop makes through the
engine, and parameter counts for MLflow. Tasks subclass :class:`TrainingTask` and add
data loading, model building, collation, token counting and export."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn


class TrainingTask:
    @staticmethod
    def loss(forward: Any, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        return forward(**batch).loss

    @staticmethod
    def logits(model: nn.Module, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        return model(**batch).logits

    @staticmethod
    def parameter_counts(model: nn.Module) -> dict[str, int]:
        from nugget_core import count_parameters

        counts = count_parameters(model)
        return {"params.trainable": counts.trainable, "params.frozen": counts.total - counts.trainable}
