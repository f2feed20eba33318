"""Tiny models and data for the Nugget2D evaluation tests (random LLaMA, small BPE)."""

from __future__ import annotations

from pathlib import Path

import torch

# LoRA dropout and target modules of a Full fine-tuned LM (Nugget2D's adapter shape)
ADAPTER = {"lora_dropout": 0.0, "lora_target_modules": ["q_proj", "v_proj"]}

WORDS = ("the river delta letter alpha gamma physics module data python of a in was born "
         "city two three Paris London answer question document summarize following text").split()
TEXTS = [" ".join(WORDS[(i * 7 + j) % len(WORDS)] for j in range(12)) + "." for i in range(60)]


def make_tokenizer(folder: Path | None = None):
    from nugget_core import train_bpe_tokenizer

    tok = train_bpe_tokenizer(TEXTS + ["[INST] [/INST] _____ Fill in the blank: Based on the provided "
                                       "document, answer the following question: Please summarize "
                                       "the above document in one sentence."] * 5, vocab_size=320)
    if folder is not None:
        tok.save_pretrained(str(folder))
    return tok


def make_base_lm(vocab_size: int, seed: int = 0):
    from nugget_core.nugget2d import TinyCausalSpec, build_tiny_causal_lm

    # a wide init so that logits differ visibly between systems (HF's 0.02 is near-uniform)
    return build_tiny_causal_lm("llama", TinyCausalSpec(vocab_size=vocab_size, initializer_range=0.2), seed=seed)


def make_nugget2d(base, recent_window: int = 8, seed: int = 0):
    """A Nugget2D model whose phi and theta differ from the base LM (non-zero LoRA B)."""
    from nugget_core.nugget2d import Nugget2DConfig, Nugget2DModel

    model = Nugget2DModel(base, Nugget2DConfig(lora_rank=4, lora_alpha=4, scorer_layer=1,
                                               recent_window=recent_window)).eval()
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "lora_B" in name:
                p.copy_(torch.randn(p.shape, generator=g) * 0.2)
    return model
