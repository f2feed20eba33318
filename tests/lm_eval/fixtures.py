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


def smollm2_style_tokenizer(texts: list[str], vocab_size: int = 300):
    """Byte-level BPE pre-tokenised as SmolLM2's (each digit its own piece, then GPT-2's
    byte-level split), so ``" in 1928"`` -> ``"Ġin", "Ġ", "1", "9", "2", "8"``."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Digits(individual_digits=True),
                                                 pre_tokenizers.ByteLevel(add_prefix_space=False)])
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(texts, trainers.BpeTrainer(
        vocab_size=vocab_size, special_tokens=["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False))
    return PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<|im_start|>", eos_token="<|im_end|>",
                                   unk_token="<|endoftext|>")


def llama_style_tokenizer(texts: list[str], vocab_size: int = 120):
    """transformers' own LLaMA tokenizer (SentencePiece ``▁`` word starts prepended to the
    text, byte fallback to ``<0xNN>`` pieces, a decoder that strips the first leading
    space; ``<unk>`` / ``<s>`` / ``</s>`` special) over a small BPE vocabulary trained
    here with LLaMA's digit splitting, so ``" in 1928"`` -> ``"▁in", "▁", "1", "9", "2", "8"``."""
    import json

    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    from transformers.models.llama.tokenization_llama import LlamaTokenizer

    bpe = Tokenizer(models.BPE(unk_token="<unk>"))
    bpe.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always"),
                                                 pre_tokenizers.Digits(individual_digits=True)])
    bpe.train_from_iterator(texts, trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=["<unk>", "<s>", "</s>"],
                                                       show_progress=False))
    model = json.loads(bpe.to_str())["model"]
    vocab = dict(model["vocab"])
    for byte in range(256):  # the byte-fallback pieces every LLaMA vocabulary holds
        vocab.setdefault(f"<0x{byte:02X}>", len(vocab))
    merges = [tuple(m.split()) if isinstance(m, str) else tuple(m) for m in model["merges"]]
    return LlamaTokenizer(vocab=vocab, merges=merges)
