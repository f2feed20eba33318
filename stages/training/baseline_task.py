"""Training task of the baselines: single-vector bottlenecks (TSDAE, RE) and Nugget
ablations (rule-based selectors, no feedback), on the data of `NuggetTask`.

Reuses `NuggetTask` for data, batches, loss and export (same documents, same objectives,
same TSDAE-style deletion noise), and changes only what differs:

- ``bottleneck="cross" | "gating"``: the model is the HF seq2seq model `NuggetTask`
  would nuggify, wrapped instead as a `nugget_core.baselines.BottleneckModel`;
- ``nugget.selector == "chunk"``: batches carry punctuation flags as ``boundary_mask``,
  so the chunking selector takes the last punctuation of each chunk (Nugget §7.1)
  rather than falling back to the chunk's last token.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch import nn

from stages.training.batches import Example
from stages.training.nugget_task import NuggetTask


@dataclass
class BaselineTask(NuggetTask):
    bottleneck: str = ""  # "" = a Nugget model (ablation); "cross" / "gating" = single vector
    _punct: Any = field(default=None, init=False, repr=False)

    def build_model(self, init_dir: Path | None) -> nn.Module:
        if not self.bottleneck:
            return super().build_model(init_dir)
        from nugget_core.baselines import BottleneckConfig, BottleneckModel, get_bottleneck_model

        if init_dir is not None:
            return BottleneckModel.from_pretrained(init_dir)
        # the very HF model NuggetTask builds (tiny or pretrained), hooks removed
        base = super().build_model(None).unload()
        return get_bottleneck_model(base, BottleneckConfig(decoder=self.bottleneck))

    def collate(self, examples: list[Example], step: int, rank: int, train: bool) -> dict[str, torch.Tensor]:
        batch = super().collate(examples, step, rank, train)
        if not self.bottleneck and self.nugget.selector == "chunk":
            from nugget_core import punctuation_token_ids, token_flags

            if self._punct is None:
                self._punct = punctuation_token_ids(self.tokenizer())
            batch["boundary_mask"] = token_flags(batch["input_ids"], self._punct)
        return batch
