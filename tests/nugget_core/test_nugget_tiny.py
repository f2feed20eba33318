"""Tiny-profile factory (offline BPE tokenizer + random-init BART) and the 200-step
Nugget autoencoder overfit check."""

from __future__ import annotations

import time

import pytest
import torch
from transformers import BartForConditionalGeneration

from nugget_core import (
    NuggetConfig,
    TinyBartSpec,
    build_tiny_bart,
    get_nugget_model,
    punctuation_token_ids,
    token_flags,
    train_bpe_tokenizer,
)

CORPUS = [
    "The quick brown fox jumps over the lazy dog. It was a sunny day!",
    "Nuggets are selected tokens; they summarise the text, don't they?",
    "A tiny BART is trained here, on two cores, in a few seconds.",
] * 20
DOCS = [
    "The quick brown fox jumps over the lazy dog.",
    "Nuggets are selected tokens; they summarise the text.",
    "A tiny BART is trained here, on two cores.",
    "It was a sunny day, don't they?",
]


def test_bpe_tokenizer_trains_offline_with_special_tokens():
    start = time.perf_counter()
    tok = train_bpe_tokenizer(CORPUS, vocab_size=300)
    assert time.perf_counter() - start < 10
    assert (tok.bos_token, tok.pad_token, tok.eos_token, tok.unk_token) == (
        "<s>",
        "<pad>",
        "</s>",
        "<unk>",
    )
    assert (tok.bos_token_id, tok.pad_token_id, tok.eos_token_id, tok.unk_token_id) == (0, 1, 2, 3)
    assert len(tok) == 300
    enc = tok(DOCS[:2], padding=True, return_tensors="pt")
    ids = enc["input_ids"]
    assert ids[0, 0] == tok.bos_token_id and tok.eos_token_id in ids[0].tolist()
    assert ids[1, -1] == tok.pad_token_id or enc["attention_mask"][1].all()
    assert tok.decode(ids[0], skip_special_tokens=True) == DOCS[0]
    flags = token_flags(ids, punctuation_token_ids(tok))
    pieces = tok.convert_ids_to_tokens(ids[0][flags[0]].tolist())
    assert pieces and all(p.strip("Ġ") in {".", ",", ";", "!", "?", "'"} for p in pieces)


def test_build_tiny_bart_from_spec():
    tok = train_bpe_tokenizer(CORPUS, vocab_size=300)
    spec = TinyBartSpec(
        d_model=32, layers=1, heads=2, ffn_dim=48, max_positions=40, attn_implementation="eager"
    )
    model = build_tiny_bart(tok, spec, seed=3)
    assert isinstance(model, BartForConditionalGeneration)
    c = model.config
    assert (
        c.d_model,
        c.encoder_layers,
        c.decoder_layers,
        c.encoder_attention_heads,
        c.encoder_ffn_dim,
    ) == (32, 1, 1, 2, 48)
    assert (c.max_position_embeddings, c.vocab_size, c._attn_implementation) == (40, 300, "eager")
    assert (c.pad_token_id, c.eos_token_id, c.decoder_start_token_id) == (1, 2, 2)
    assert model.lm_head.weight.data_ptr() != model.model.shared.weight.data_ptr()  # untied
    again = build_tiny_bart(tok, spec, seed=3)
    assert all(
        torch.equal(a, b)
        for a, b in zip(model.state_dict().values(), again.state_dict().values(), strict=True)
    )


@pytest.mark.slow
@pytest.mark.usefixtures("one_thread")  # 2 threads crawl when the cores are shared
def test_nugget_autoencoder_overfits_in_200_steps():
    """Measured on 2 CPU cores: loss 5.73 -> 0.005 in 200 steps (~10-17 s); we ask for
    a 100x drop, 10x short of what we measured, so that only a real bug fails it."""
    torch.manual_seed(0)
    tok = train_bpe_tokenizer(CORPUS, vocab_size=300)
    model = build_tiny_bart(tok, TinyBartSpec(dropout=0.0), seed=0)
    # Default config apart from the ratio and the layer: feedback on, bottom frozen.
    nugget_model = get_nugget_model(model, NuggetConfig(ratio=0.25, scorer_layer=1))
    batch = tok(DOCS, padding=True, return_tensors="pt")
    labels = batch["input_ids"].masked_fill(batch["attention_mask"].eq(0), -100)
    optimizer = torch.optim.AdamW(
        [p for p in nugget_model.parameters() if p.requires_grad], lr=3e-3
    )
    nugget_model.train()
    losses = []
    for _ in range(200):
        loss = nugget_model(**batch, labels=labels).loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert losses[0] > 5.0
    assert losses[-1] < losses[0] / 100, (losses[0], losses[-1])
    nuggets = nugget_model.encode(batch["input_ids"], batch["attention_mask"])
    lengths = batch["attention_mask"].sum(1)
    assert nuggets.counts.tolist() == torch.ceil(lengths * 0.25).long().tolist()
    nugget_model.eval()
    out = nugget_model.generate(**batch, num_beams=5, max_new_tokens=30)
    decoded = tok.batch_decode(out, skip_special_tokens=True)
    assert sum(d.strip() == doc for d, doc in zip(decoded, DOCS, strict=True)) >= 3, decoded


def test_chunk_boundaries_are_commas_and_periods_only():
    """Nugget §7.1's chunking baseline ends chunks at commas and periods
    (it used every punctuation token, semicolons and exclamation marks included)."""
    from nugget_core import chunk_token_ids

    tok = train_bpe_tokenizer(["one, two. three; four! five? six: seven."] * 30, vocab_size=300)
    pieces = {tok.convert_ids_to_tokens(i).replace("Ġ", "") for i in chunk_token_ids(tok)}
    assert pieces and pieces <= {",", ".", ",.", ".,"}
    assert {",", "."} <= pieces
    everything = {tok.convert_ids_to_tokens(i).replace("Ġ", "") for i in punctuation_token_ids(tok)}
    assert {";", "!", "?"} <= everything  # still available to the sentence selector's filter
