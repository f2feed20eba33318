"""Tiny random-init seq2seq models and inputs for the nugget_core tests (no hub access).

Test files are named test_nugget_*.py so that they never share a basename with other
test modules of the repository (the directory is not a package)."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import pytest
import torch
from transformers import (
    BartConfig,
    BartForConditionalGeneration,
    MBartConfig,
    MBartForConditionalGeneration,
    PreTrainedModel,
    T5Config,
    T5ForConditionalGeneration,
)

if TYPE_CHECKING:
    from nugget_core.nugget2d import Nugget2DModel

VOCAB = 60


def make_model(arch: str, impl: str = "sdpa", seed: int = 0) -> PreTrainedModel:
    """A 2-layer, d=32 model in eval mode (dropout off)."""
    if arch in ("bart", "mbart"):
        config_cls, cls = {
            "bart": (BartConfig, BartForConditionalGeneration),
            "mbart": (MBartConfig, MBartForConditionalGeneration),
        }[arch]
        config = config_cls(
            vocab_size=VOCAB,
            d_model=32,
            encoder_layers=2,
            decoder_layers=2,
            encoder_attention_heads=4,
            decoder_attention_heads=4,
            encoder_ffn_dim=64,
            decoder_ffn_dim=64,
            max_position_embeddings=64,
            pad_token_id=1,
            bos_token_id=0,
            eos_token_id=2,
            decoder_start_token_id=2,
            forced_eos_token_id=None,
            init_std=0.2,
            dropout=0.0,
        )
    elif arch == "t5":
        config = T5Config(
            vocab_size=VOCAB,
            d_model=32,
            d_kv=8,
            d_ff=64,
            num_layers=2,
            num_heads=4,
            decoder_start_token_id=0,
            pad_token_id=0,
            eos_token_id=1,
            dropout_rate=0.0,
        )
        cls = T5ForConditionalGeneration
    else:
        raise ValueError(arch)
    torch.manual_seed(seed)
    model = cls(config).eval()
    model.set_attn_implementation(impl)
    return model


def make_batch(model: PreTrainedModel, seed: int = 1) -> dict[str, torch.Tensor]:
    """Two sources (lengths 9 and 6, right-padded) and 5-token decoder inputs."""
    g = torch.Generator().manual_seed(seed)
    pad = model.config.pad_token_id
    input_ids = torch.randint(3, VOCAB, (2, 9), generator=g)
    attention_mask = torch.ones_like(input_ids)
    attention_mask[1, 6:] = 0
    input_ids[1, 6:] = pad
    decoder_input_ids = torch.randint(3, VOCAB, (2, 5), generator=g)
    return {
        "input_ids": input_ids,
        "attention_mask": attention_mask,
        "decoder_input_ids": decoder_input_ids,
    }


# Helpers are handed out as fixtures: test modules here are not a package, so importing
# from this conftest would clash with other conftest modules of the suite.
@pytest.fixture
def model_factory():
    return make_model


@pytest.fixture
def batch_factory():
    return make_batch


@pytest.fixture(autouse=True)
def _deterministic() -> None:
    torch.manual_seed(1234)


# --- Nugget2D (decoder-only) fixtures -------------------------------------------------


def make_causal_lm(family: str = "llama", impl: str = "sdpa", seed: int = 0) -> PreTrainedModel:
    """A 2-layer, d=32, GQA (4 heads / 2 kv heads) random-init causal LM, eval mode."""
    from nugget_core.nugget2d import TinyCausalSpec, build_tiny_causal_lm

    return build_tiny_causal_lm(family, TinyCausalSpec(attn_implementation=impl), seed=seed)


def make_doc_batch(seed: int = 1, vocab: int = 64) -> dict[str, torch.Tensor]:
    """Two right-padded documents (lengths 12 and 8), prompts (3 and 2), answers (5, 4)."""
    g = torch.Generator().manual_seed(seed)

    def segment(n: int, lengths: tuple[int, int]) -> tuple[torch.Tensor, torch.Tensor]:
        ids = torch.randint(3, vocab, (2, n), generator=g)
        mask = (torch.arange(n)[None] < torch.tensor(lengths)[:, None]).long()
        return ids.masked_fill(mask.eq(0), 0), mask

    doc_ids, doc_mask = segment(12, (12, 8))
    prompt_ids, prompt_mask = segment(3, (3, 2))
    answer_ids, answer_mask = segment(5, (5, 4))
    return {
        "doc_ids": doc_ids,
        "doc_mask": doc_mask,
        "prompt_ids": prompt_ids,
        "prompt_mask": prompt_mask,
        "answer_ids": answer_ids,
        "answer_mask": answer_mask,
    }


@pytest.fixture
def causal_factory():
    return make_causal_lm


@pytest.fixture
def doc_batch():
    return make_doc_batch()


@pytest.fixture
def one_thread():
    """Tiny matmuls are dominated by thread hand-offs on 2 shared cores (measured: the
    Nugget2D overfit test takes ~3 s on one thread, ~120 s on two under load)."""
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)


def randomize_nugget2d(model: Nugget2DModel) -> Nugget2DModel:
    """Give a `Nugget2DModel` non-zero, different phi and theta (LoRA B starts at 0), a
    random scorer and soft prompt (seeded), so that routing or loading them wrongly shows."""
    torch.manual_seed(3)
    with torch.no_grad():
        for name, p in model.peft.named_parameters():
            if "lora_" in name:
                p.normal_(std=0.3)
        for p in model.scorer.parameters():
            p.normal_()
        model.soft_prompt.normal_()
    return model
