"""Training task of the RE study (RE §3-4): restore a text from its single embedding.

One task is one system of the grid: an encoder configuration of RE table 1 (frozen or
updated pretrained encoder, with or without new layers), a pooling (eq. 1 / eq. 2) and
a decoder (fig. 2: input / cross / gating), trained with the autoregressive objective of
eq. 6 on the texts of one sentence count (``build_re_data``). The model is
`nugget_core.restorable.RestorableModel` around the pretrained encoder-decoder
(`base_model`): the tiny BART ``train_nugget`` trained as an autoencoder (profile=tiny),
or T5-small (profile=paper).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from stages.common.languages import has_language_codes, set_language_codes
from stages.common.padding import pad
from stages.restorable.artifacts import RestorationTexts
from stages.training.task import Batch
from stages.training.task_steps import (
    IGNORE,
    checkpointing_unsupported,
    export_pretrained,
    labelled_tokens,
    load_tokenizer,
    mismatch_encoder_input,
    model_logits,
    model_loss,
    seq2seq_tokens,
    trainable_and_frozen,
)

if TYPE_CHECKING:
    from stages.config.schema import REBaseModel
    from stages.nugget.artifacts.models import TrainedNugget


@dataclass(frozen=True)
class RestorableBase:
    """Where the pretrained encoder-decoder comes from: ``stage_ae`` (a `NuggetModel`
    folder of train_nugget; its nugget parts are removed) or ``pretrained`` (HF
    ``from_pretrained`` of a hub name or local folder). Its tokenizer lives there too."""

    source: str
    path: str
    attn_implementation: str = "sdpa"

    def __post_init__(self) -> None:
        if self.source not in ("stage_ae", "pretrained"):
            raise ValueError(f"model.re.source: value {self.source!r} is not stage_ae / pretrained")

    def load(self) -> Any:
        """The HF seq2seq model (train mode off; the caller wraps it)."""
        if self.source == "stage_ae":
            from nugget_core import NuggetModel

            return NuggetModel.from_pretrained(self.path, attn_implementation=self.attn_implementation).unload()
        from transformers import AutoModelForSeq2SeqLM

        return AutoModelForSeq2SeqLM.from_pretrained(self.path, attn_implementation=self.attn_implementation,
                                                     trust_remote_code=False)

    def describe(self) -> str:
        return (f"train_nugget's AE model ({self.path})" if self.source == "stage_ae"
                else f"pretrained {self.path}")


def restorable_base(cfg: REBaseModel, nugget: TrainedNugget) -> RestorableBase:
    """``model.re`` resolved: train_nugget's AE model folder (the stage's ``train_nugget``
    input, ``nugget``), or the pretrained name."""
    if cfg.source == "pretrained":
        return RestorableBase("pretrained", cfg.name_or_path, cfg.attn_implementation)
    if nugget.objective != "ae":  # config_errors catches this first; an edited artifact would not
        raise ValueError(f"model.re.source=stage_ae needs train_nugget's AE model, not {nugget.objective!r}")
    return RestorableBase("stage_ae", str(nugget.model_dir), cfg.attn_implementation)


def token_limit(model_config: Any, max_tokens: int) -> int:
    """Truncation length: ``max_tokens`` (0 = the base model's position limit; T5's
    relative positions have none, so the paper's 512, RE table 6). A [CLS] vector takes
    one encoder position."""
    limit = getattr(model_config, "max_position_embeddings", None) or 512
    return min(max_tokens, limit - 1) if max_tokens else limit - 1


@dataclass
class RestorationTask:
    """One RE system: ``restorable`` holds `nugget_core.restorable.RestorableConfig`'s
    fields; its texts are ``data``'s (build_re_data) of ``sentences`` sentences."""

    base: RestorableBase
    restorable: dict[str, Any]
    data: RestorationTexts
    sentences: int
    max_tokens: int = 0
    dev_examples: int = 0
    seed: int = 0
    _tok: Any = field(default=None, init=False, repr=False)
    _limit: int = field(default=0, init=False, repr=False)
    # the input decoder leaves no cross-attention; a frozen encoder's shared embedding still
    # trains through the decoder; but the untied tiny BART keeps a `shared` table nothing reads
    find_unused_parameters: bool = field(default=True, init=False)

    def tokenizer(self) -> Any:
        if self._tok is None:
            self._tok = load_tokenizer(self.base.path)
            if has_language_codes(self._tok):  # eq. 6: the text is input and target, one language
                set_language_codes(self._tok, self._tok.src_lang, self._tok.src_lang)
        return self._tok

    def limit(self) -> int:
        if not self._limit:
            from transformers import AutoConfig

            config = AutoConfig.from_pretrained(self.base.path, trust_remote_code=False)
            self._limit = token_limit(config, self.max_tokens)
        return self._limit

    def load_split(self, split: str) -> list[tuple[list[int], list[int]]]:
        """(encoder ids, target ids) per text: the text is both (eq. 6)."""
        texts = self.data.texts(self.sentences, split, self.dev_examples if split == "dev" else 0)
        if not texts:
            raise ValueError(f"{self.data.path}: no {split} texts of {self.sentences} sentences")
        tok, limit = self.tokenizer(), self.limit()
        sources = tok(texts, truncation=True, max_length=limit)["input_ids"]
        targets = tok(text_target=texts, truncation=True, max_length=limit)["input_ids"]
        return list(zip(sources, targets, strict=True))

    @staticmethod
    def example_length(row: tuple[list[int], list[int]]) -> int:
        """Tokens of a row (``train.re.group_by_length``): the text's, encoder side."""
        return len(row[0])

    def build_model(self, init_dir: Path | None) -> nn.Module:
        from nugget_core.restorable import RestorableConfig, RestorableModel, get_restorable_model

        if init_dir is not None:
            return RestorableModel.from_pretrained(init_dir)
        base = self.base.load()
        torch.manual_seed(self.seed)  # the new parts (W, [CLS], extra layers, gating) alike on every rank
        return get_restorable_model(base, RestorableConfig(**self.restorable))

    def enable_activation_checkpointing(self, model: nn.Module) -> None:
        raise checkpointing_unsupported(self)

    def collate(self, rows: list[tuple[list[int], list[int]]], step: int, rank: int, train: bool) -> Batch:
        ids, mask = pad([r[0] for r in rows], self.tokenizer().pad_token_id)
        labels, _ = pad([r[1] for r in rows], IGNORE)
        return {"input_ids": ids, "attention_mask": mask, "labels": labels}

    loss = staticmethod(model_loss)
    logits = staticmethod(model_logits)
    n_target_tokens = staticmethod(labelled_tokens)
    n_tokens = staticmethod(seq2seq_tokens)
    mismatch = staticmethod(mismatch_encoder_input)  # the encoder input: what the nuggets / embedding compress
    parameter_counts = staticmethod(trainable_and_frozen)

    def export(self, model: nn.Module, directory: Path) -> None:
        """``model.save_pretrained`` + the tokenizer: loadable outside Ray."""
        export_pretrained(model, directory, self.tokenizer)
