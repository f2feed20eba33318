"""Where a ``best_dev`` fit keeps its best evaluation's weights (`stages.training.loop`): rank 0
writes the trainable parameters at each improving evaluation to the fit's storage
(``config["best_uri"]/step-<s>/``, `best_weights_uri`) and, at the end, loads the best
evaluation's back into the model it exports.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import torch

from stages.training.storage import copy_tree

BEST_FILE = "trainable.pt"  # the trainable parameters of a best-dev evaluation


def best_weights_uri(config: dict[str, Any], step: int) -> str:
    """Where a ``best_dev`` fit keeps the trainable parameters of its evaluation at ``step``."""
    if not config.get("best_uri"):
        raise ValueError("export_model=best_dev: the loop config has no best_uri (the fit's storage for "
                         "the best evaluation's weights)")
    return f"{config['best_uri']}/step-{step}"


def trainable_state(module: torch.nn.Module) -> dict[str, torch.Tensor]:
    # frozen parameters never change: the trainable ones are the difference between steps
    return {n: p.detach().to("cpu", copy=True) for n, p in module.named_parameters() if p.requires_grad}


def save_best(module: torch.nn.Module, uri: str) -> None:
    """Write ``module``'s trainable parameters to ``uri``."""
    with tempfile.TemporaryDirectory(prefix="nugget-best-") as tmp:
        torch.save(trainable_state(module), Path(tmp) / BEST_FILE)
        copy_tree(tmp, uri)


def restore_best(module: torch.nn.Module, uri: str) -> None:
    """Load the trainable parameters `save_best` wrote to ``uri`` into ``module``."""
    with tempfile.TemporaryDirectory(prefix="nugget-best-") as tmp:
        copy_tree(uri, tmp)
        best = torch.load(Path(tmp) / BEST_FILE, map_location="cpu", weights_only=True)
    if best.keys() != trainable_state(module).keys():
        raise RuntimeError(f"{uri}: its parameters are not the model's trainable ones")
    with torch.no_grad():
        for name, param in module.named_parameters():
            if name in best:
                param.copy_(best[name])
