"""The "Full fine-tuned" baseline (Nugget2D §6.3, table 4): the base LM reads the whole
appendix-C prompt and is fine-tuned, with one LoRA adapter of the same rank as
Nugget2D's, to produce the answer.

Each example is ``document part + prompt part + answer + EOS`` as one sequence
(`stages.nugget2d.lm_task.task_examples`, the tokenisation the evaluations use); the loss is the
mean NLL of the answer tokens and EOS only (labels are -100 elsewhere). The export is a
peft adapter folder plus the tokenizer; `stages.nugget2d.artifacts.FullFinetunedLM.load`
rebuilds the LM with the adapter merged in.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch import nn

from stages.common.padding import pad
from stages.nugget2d.artifacts import LMRecords
from stages.nugget2d.lm_task import pad_id, task_examples
from stages.training.task import Batch
from stages.training.task_steps import (
    IGNORE,
    export_pretrained,
    keep_dev,
    labelled_tokens,
    load_tokenizer,
    model_logits,
    model_loss,
    trainable_and_frozen,
)


@dataclass
class FullFinetuneTask:
    data: LMRecords  # build_lm's output
    base_dir: str  # prepare_lm's HF folder (weights + tokenizer)
    finetune_task: str
    lora_rank: int
    lora_alpha: int
    lora_dropout: float
    lora_target_modules: list[str]
    max_doc_tokens: int = 0
    prompt_format: str = "inst"  # nugget_core.nugget2d.prompts.PROMPT_FORMATS
    attn_implementation: str = "sdpa"
    dev_examples: int = 0
    seed: int = 0
    find_unused_parameters: bool = field(default=False, init=False)
    _tok: Any = field(default=None, init=False, repr=False)  # loaded once per process

    def tokenizer(self) -> Any:
        if self._tok is None:
            self._tok = load_tokenizer(self.base_dir)
        return self._tok

    def load_split(self, split: str) -> list[dict[str, list[int]]]:
        rows = task_examples(self.data, self.tokenizer(), self.finetune_task, split, self.max_doc_tokens,
                             self.prompt_format)
        return keep_dev(rows, split, self.dev_examples)

    def build_model(self, init_dir: Path | None) -> nn.Module:
        from peft import PeftModel, get_peft_model
        from transformers import AutoModelForCausalLM

        from nugget_core.nugget2d import Nugget2DConfig
        from nugget_core.nugget2d.adapters import lora_config

        base = AutoModelForCausalLM.from_pretrained(self.base_dir, attn_implementation=self.attn_implementation,
                                                    trust_remote_code=False)
        if init_dir is not None:
            return PeftModel.from_pretrained(base, str(init_dir), is_trainable=True)
        torch.manual_seed(self.seed)  # LoRA A initialisation
        # the same adapter (rank, alpha, dropout, target modules) as Nugget2D's phi and theta
        config = lora_config(Nugget2DConfig(
            lora_rank=self.lora_rank, lora_alpha=self.lora_alpha, lora_dropout=self.lora_dropout,
            lora_target_modules=list(self.lora_target_modules),
        ))
        return get_peft_model(base, config)

    def enable_activation_checkpointing(self, model: nn.Module) -> None:
        from peft import PeftModel

        if not isinstance(model, PeftModel):
            raise TypeError(f"{type(model).__name__}: not the peft model FullFinetuneTask builds")
        model.gradient_checkpointing_enable({"use_reentrant": False})  # one adapter, always on: no routing

    def collate(self, rows: list[dict[str, list[int]]], step: int, rank: int, train: bool) -> dict[str, torch.Tensor]:
        """Right-padded ``input_ids`` / ``attention_mask`` / ``labels`` (answer + EOS only)."""
        sequences = [r["doc"] + r["prompt"] + r["answer"] for r in rows]
        ids, mask = pad(sequences, pad_id(self.tokenizer()))
        labels = torch.full_like(ids, IGNORE)
        for i, (row, seq) in enumerate(zip(rows, sequences, strict=True)):
            labels[i, len(seq) - len(row["answer"]) : len(seq)] = torch.tensor(row["answer"], device="cpu")
        return {"input_ids": ids, "attention_mask": mask, "labels": labels}

    loss = staticmethod(model_loss)
    logits = staticmethod(model_logits)
    n_target_tokens = staticmethod(labelled_tokens)

    @staticmethod
    def n_tokens(batch: Batch) -> int:
        return int(batch["attention_mask"].sum())

    parameter_counts = staticmethod(trainable_and_frozen)

    def export(self, model: nn.Module, directory: Path) -> None:
        """The peft adapter (``adapter_config.json`` + weights) and the tokenizer."""
        export_pretrained(model, str(directory), self.tokenizer)  # peft's save_pretrained takes a str
