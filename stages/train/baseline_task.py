"""Training task of the baselines: single-vector bottlenecks (TSDAE, RE) and Nugget
ablations (rule-based selectors, no feedback), on the data of `NuggetTask`.

Reuses `NuggetTask` for data, batches, loss and export (same documents, same objectives,
same TSDAE-style deletion noise), and changes only what differs:

- ``bottleneck="cross" | "gating"``: the model is the HF seq2seq model `NuggetTask`
  would nuggify, wrapped instead as a `nugget_core.baselines.BottleneckModel`
  (rule-based selectors need nothing here: `NuggetTask.collate` flags their boundaries).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from torch import nn

from stages.train.nugget_task import NuggetTask


@dataclass
class BaselineTask(NuggetTask):
    bottleneck: str = ""  # "" = a Nugget model (ablation); "cross" / "gating" = single vector

    def build_model(self, init_dir: Path | None) -> nn.Module:
        if not self.bottleneck:
            return super().build_model(init_dir)
        from nugget_core.baselines import BottleneckConfig, BottleneckModel, get_bottleneck_model

        if init_dir is not None:
            return BottleneckModel.from_pretrained(init_dir)
        # the very HF model NuggetTask builds (tiny or pretrained), hooks removed
        base = self.nugget_model(None).unload()
        return get_bottleneck_model(base, BottleneckConfig(decoder=self.bottleneck))
