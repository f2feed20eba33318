"""The Nugget autoencoder of the burst: nugget_core's Nugget on a from-scratch BART.

As profile gpu1 builds it (`stages.nugget.nugget_task.nugget_model` with
``model.seq2seq.source=tiny_random``): `nugget_core.build_tiny_bart` at the preset's shape,
untied embeddings, random init, then `nugget_core.get_nugget_model` (top-k scorer on encoder
layer l, feedback, bottom layers frozen: paper §3.3). The vocabulary is SmolLM2's; BART's
special tokens are its ``<|im_start|>`` (BOS) and ``<|im_end|>`` (EOS), with ``<|endoftext|>``
as padding (SmolLM2 pads with EOS, and a padding id's embedding gets no gradient).

A document is ``BOS ids EOS`` on both sides (BART's ``<s> ... </s>``); the decoder starts from
EOS (BART's decoder_start) and is scored on the text it writes between them.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache, partial
from typing import TYPE_CHECKING, Any, cast

import torch

from benchmarks.headline.presets import AEPreset
from benchmarks.headline.scoring import NO_SCIPY, scipy_available
from stages.common.device import to_device
from stages.common.padding import pad
from stages.evaluation.analysis import TokenStats
from stages.evaluation.token_frequency import add_selections, frequency_summary, readable_token

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase

    from nugget_core import NuggetModel

IGNORE = -100
PAD_FALLBACK = "<|endoftext|>"


@dataclass(frozen=True)
class Specials:
    bos: int
    eos: int
    pad: int


def bart_specials(tok: PreTrainedTokenizerBase) -> Specials:
    """BOS / EOS / a padding id distinct from both; sets it as ``tok``'s pad token (what
    `nugget_core.build_tiny_bart` reads)."""
    bos, eos = tok.bos_token_id, tok.eos_token_id
    if bos is None or eos is None:
        raise ValueError("the tokenizer needs BOS and EOS tokens for a BART")
    if tok.pad_token_id is None or tok.pad_token_id in (bos, eos):
        candidates = [t for t in (tok.unk_token, PAD_FALLBACK) if t is not None]
        found = next((t for t in candidates if tok.convert_tokens_to_ids(t) not in (bos, eos, None)), None)
        if found is None:
            raise ValueError("no token to pad with that is neither BOS nor EOS")
        tok.pad_token = found
    return Specials(int(bos), int(eos), int(tok.pad_token_id))


def build_model(tok: PreTrainedTokenizerBase, preset: AEPreset, ratio: float, seed: int) -> NuggetModel:
    """A fresh Nugget BART at ``ratio`` (module docstring), on the CPU."""
    from nugget_core import NuggetConfig, TinyBartSpec, build_tiny_bart, get_nugget_model

    bart_specials(tok)
    spec = TinyBartSpec(d_model=preset.d_model, layers=preset.layers, heads=preset.heads, ffn_dim=preset.ffn_dim,
                        max_positions=max(16, preset.max_doc_tokens + 8), dropout=preset.dropout,
                        attn_implementation="sdpa", tie_embeddings=False)
    base = build_tiny_bart(cast(Any, tok), spec, seed=seed)  # any fast tokenizer with BOS / EOS / pad
    return get_nugget_model(base, NuggetConfig(ratio=ratio, scorer_layer=preset.scorer_layer))


def batch_of(docs: list[list[int]], sp: Specials) -> dict[str, torch.Tensor]:
    """``input_ids`` / ``attention_mask`` / ``labels [B, T]`` (host memory) of documents."""
    seqs = [[sp.bos, *d, sp.eos] for d in docs]
    ids, mask = pad(seqs, sp.pad)
    labels, _ = pad(seqs, IGNORE)
    return {"input_ids": ids, "attention_mask": mask, "labels": labels}


def tokens_of(batch: dict[str, torch.Tensor]) -> tuple[int, int]:
    """(encoder tokens, target tokens) of a `batch_of` batch."""
    return int(batch["attention_mask"].sum()), int(batch["labels"].ne(IGNORE).sum())


def loss_of(model: NuggetModel) -> Any:
    return lambda batch: model(**batch).loss


def by_length(docs: list[list[int]], size: int) -> list[list[int]]:
    """Indices of ``docs`` in batches of ``size``, shortest first (a batch pads to its longest)."""
    order = sorted(range(len(docs)), key=lambda i: len(docs[i]))
    return [order[i : i + size] for i in range(0, len(order), size)]


@torch.no_grad()
def reconstruct(model: NuggetModel, tok: PreTrainedTokenizerBase, docs: list[list[int]], beams: int,
                batch_size: int, device: torch.device) -> list[str]:
    """Beam-search reconstructions of ``docs`` from their nuggets, detokenised (input order)."""
    sp, out = bart_specials(tok), [""] * len(docs)
    for chunk in by_length(docs, batch_size):
        batch = to_device(batch_of([docs[i] for i in chunk], sp), device)
        longest = int(batch["attention_mask"].sum(dim=1).max())
        ids = model.generate(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"], num_beams=beams,
                             max_new_tokens=longest + 2, do_sample=False, no_repeat_ngram_size=0, length_penalty=1.0,
                             early_stopping=True)
        for i, text in zip(chunk, tok.batch_decode(ids, skip_special_tokens=True), strict=True):
            out[i] = text.strip()
    return out


def references(tok: PreTrainedTokenizerBase, docs: list[list[int]]) -> list[str]:
    """Each document's text: its ids decoded as its reconstruction is."""
    return [text.strip() for text in tok.batch_decode(docs, skip_special_tokens=True)]


@torch.no_grad()
def token_frequencies(model: NuggetModel, tok: PreTrainedTokenizerBase, docs: list[list[int]], ids: list[str],
                      batch_size: int, device: torch.device) -> dict[str, Any]:
    """Nugget fig. 5 for ``docs`` (unit ids ``ids``): which tokens the scorer selects, each
    counted as the word it spells, BOS and EOS included (`stages.evaluation.token_frequency`,
    as stage ``analyze_nuggets`` counts them)."""
    sp, stats = bart_specials(tok), TokenStats()
    word = cache(partial(readable_token, tok))
    for start in range(0, len(docs), batch_size):
        batch = to_device(batch_of(docs[start : start + batch_size], sp), device)
        nuggets = model.encode(batch["input_ids"], batch["attention_mask"])
        add_selections(stats, word, tok, batch["input_ids"].cpu(), batch["attention_mask"].cpu(),
                       to_device(nuggets, "cpu"))
    record, _, _ = frequency_summary(stats, ids, intervals=scipy_available())
    return {**record, "intervals_note": "" if scipy_available() else NO_SCIPY}
