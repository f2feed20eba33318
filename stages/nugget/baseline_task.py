"""Training task of the baselines: single-vector bottlenecks (TSDAE, RE) and Nugget
ablations (rule-based selectors, no feedback), on the data of `NuggetTask`.

Same constructor fields as `NuggetTask` (`stages.nugget.nugget_task.NuggetTaskFields`) and
the same steps for data, batches, loss and export (same documents, same objectives, same
TSDAE-style deletion noise: `stages.nugget.nugget_task`'s functions); only the model differs:

- ``bottleneck=""``: the Nugget model `NuggetTask` builds (an ablation: rule-based
  selectors need nothing else, the batches flag their boundaries);
- ``bottleneck="cross" | "gating"``: the HF seq2seq model `NuggetTask` would nuggify,
  wrapped instead as a `nugget_core.baselines.BottleneckModel`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from torch import nn

from stages.nugget.nugget_task import (
    NuggetTaskFields,
    check_fields,
    nugget_batch,
    nugget_examples,
    nugget_model,
    nugget_tokenizer,
)
from stages.training.batches import Example
from stages.training.task import Batch
from stages.training.task_steps import (
    checkpointing_unsupported,
    export_pretrained,
    labelled_tokens,
    mismatch_encoder_input,
    model_logits,
    model_loss,
    seq2seq_tokens,
    trainable_and_frozen,
)


@dataclass
class BaselineTask(NuggetTaskFields):
    bottleneck: str = ""  # "" = a Nugget model (ablation); "cross" / "gating" = single vector
    _tok: Any = field(default=None, init=False, repr=False)  # loaded once per process
    _punct: Any = field(default=None, init=False, repr=False)
    # as NuggetTask's: a scorer without learned selector, the untied tiny BART's `shared`
    find_unused_parameters: bool = field(default=True, init=False)

    def __post_init__(self) -> None:
        check_fields(self)

    def tokenizer(self) -> Any:
        if self._tok is None:
            self._tok = nugget_tokenizer(self)
        return self._tok

    def punctuation(self) -> set[int]:
        """The chunk selector's punctuation token ids (§7.1), found once per process."""
        from nugget_core import chunk_token_ids

        if self._punct is None:
            self._punct = chunk_token_ids(self.tokenizer())
        return self._punct

    def load_split(self, split: str) -> list[Example]:
        return nugget_examples(self, self.tokenizer(), split)

    def build_model(self, init_dir: Path | None) -> nn.Module:
        if not self.bottleneck:
            return nugget_model(self, self.tokenizer, init_dir)
        from nugget_core.baselines import BottleneckConfig, BottleneckModel, get_bottleneck_model

        if init_dir is not None:
            return BottleneckModel.from_pretrained(init_dir)
        # the very HF model NuggetTask builds (tiny or pretrained), hooks removed
        base = nugget_model(self, self.tokenizer, None).unload()
        return get_bottleneck_model(base, BottleneckConfig(decoder=self.bottleneck))

    def enable_activation_checkpointing(self, model: nn.Module) -> None:
        raise checkpointing_unsupported(self)

    def collate(self, rows: list[Example], step: int, rank: int, train: bool) -> Batch:
        return nugget_batch(self, self.tokenizer(), rows, step, rank, train, self.punctuation)

    loss = staticmethod(model_loss)
    logits = staticmethod(model_logits)
    n_target_tokens = staticmethod(labelled_tokens)
    n_tokens = staticmethod(seq2seq_tokens)
    mismatch = staticmethod(mismatch_encoder_input)  # the encoder input: what the nuggets / embedding compress
    parameter_counts = staticmethod(trainable_and_frozen)

    def export(self, model: nn.Module, directory: Path) -> None:
        """``model.save_pretrained`` + the tokenizer: loadable outside Ray."""
        export_pretrained(model, directory, self.tokenizer)
