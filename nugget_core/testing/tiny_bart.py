"""A small random-init BART built in seconds on CPU with no hub access.

Used by the tests and by ``profile=tiny``'s real training runs; the tokenizer it is sized
for usually comes from `nugget_core.tokenizer.train_bpe_tokenizer`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # torch / transformers load on build, not on import (the spec is light)
    from transformers import BartForConditionalGeneration, PreTrainedTokenizerFast


@dataclass
class TinyBartSpec:
    """Size of a tiny BART (encoder and decoder share the numbers)."""

    # metadata: help and bounds, read by the pipeline's config validation (torch-free)
    d_model: int = field(default=64, metadata={"help": "hidden size", "ge": 8})
    layers: int = field(default=2, metadata={"help": "encoder and decoder layers (each)", "ge": 1})
    heads: int = field(default=4, metadata={"help": "attention heads", "ge": 1})
    ffn_dim: int = field(default=128, metadata={"help": "feed-forward size", "ge": 8})
    max_positions: int = field(default=256, metadata={"help": "longest sequence", "ge": 16})
    dropout: float = field(default=0.1, metadata={"help": "dropout", "ge": 0.0, "lt": 1.0})
    attn_implementation: str = field(
        default="sdpa", metadata={"help": "attention kernel", "choices": ("sdpa", "eager")}
    )
    # Untied by default: Nugget feedback freezes the encoder's input embeddings, and a
    # random-init model cannot learn through a frozen tied LM head (its loss stalls:
    # docs/environment-notes.md). In transformers 5.x this also gives the decoder its own
    # input embeddings.
    tie_embeddings: bool = field(
        default=False,
        metadata={"help": "tie input / output embeddings (off: feedback freezes the inputs)"},
    )


def build_tiny_bart(
    tokenizer: PreTrainedTokenizerFast, spec: TinyBartSpec | None = None, seed: int = 0
) -> BartForConditionalGeneration:
    """A random-init `BartForConditionalGeneration` sized by ``spec`` for ``tokenizer``."""
    import torch
    from transformers import BartConfig, BartForConditionalGeneration

    spec = spec or TinyBartSpec()
    config = BartConfig(
        vocab_size=len(tokenizer),
        d_model=spec.d_model,
        encoder_layers=spec.layers,
        decoder_layers=spec.layers,
        encoder_attention_heads=spec.heads,
        decoder_attention_heads=spec.heads,
        encoder_ffn_dim=spec.ffn_dim,
        decoder_ffn_dim=spec.ffn_dim,
        max_position_embeddings=spec.max_positions,
        dropout=spec.dropout,
        attention_dropout=0.0,
        activation_dropout=0.0,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        decoder_start_token_id=tokenizer.eos_token_id,
        forced_eos_token_id=tokenizer.eos_token_id,
        tie_word_embeddings=spec.tie_embeddings,
    )
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        model = BartForConditionalGeneration(config)
    model.set_attn_implementation(spec.attn_implementation)
    return model
