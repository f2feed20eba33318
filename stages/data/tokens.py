"""Subword counts of many texts on Ray Data, with the tokenizer of the model trained.

Counts exclude special tokens (``<s>``/``</s>`` are added by the model's collator), so a
"document of at most 128 subwords" has at most 128 content subwords. Workers load the
tokenizer once per process from the tokenizer stage's folder (an absolute path: Ray
Data tasks may run on other nodes of a cluster with shared storage).
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any


@lru_cache(maxsize=4)
def load_tokenizer(path: str):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(path)


def _encode_batch(batch: dict[str, Any], tokenizer_dir: str) -> dict[str, Any]:
    tok = load_tokenizer(tokenizer_dir)
    ids = tok(list(batch["text"]), add_special_tokens=False)["input_ids"]
    return {"i": batch["i"], "ids": ids}


def encode_texts(texts: list[str], tokenizer_dir: Path, batch_size: int = 512) -> list[list[int]]:
    """Subword ids of each text, in input order (Ray Data map_batches; progress shown)."""
    import ray.data

    if not texts:
        return []
    ds = ray.data.from_items([{"i": i, "text": t} for i, t in enumerate(texts)])
    out = ds.map_batches(
        _encode_batch,
        fn_kwargs={"tokenizer_dir": str(Path(tokenizer_dir).resolve())},
        batch_size=batch_size,
        batch_format="pandas",
    ).to_pandas()
    ids: list[list[int]] = [[] for _ in texts]
    for i, seq in zip(out["i"].tolist(), out["ids"].tolist(), strict=False):
        ids[i] = [int(t) for t in seq]
    return ids


def count_tokens(texts: list[str], tokenizer_dir: Path, batch_size: int = 512) -> list[int]:
    """Subword count of each text (see :func:`encode_texts`)."""
    return [len(ids) for ids in encode_texts(texts, tokenizer_dir, batch_size)]


def truncate(text: str, tokenizer_dir: Path, limit: int) -> str:
    """``text`` cut to at most ``limit`` subwords, decoded back to text.

    Decoding a cut inside a multi-byte character leaves a replacement character that
    re-encodes longer, so the cut moves left until the decoded text re-counts in limit.
    """
    tok = load_tokenizer(str(Path(tokenizer_dir).resolve()))
    ids = tok(text, add_special_tokens=False)["input_ids"]
    for k in range(min(limit, len(ids)), 0, -1):
        out = tok.decode(ids[:k], skip_special_tokens=True).strip().rstrip("\ufffd")
        if len(tok(out, add_special_tokens=False)["input_ids"]) <= limit:
            return out
    return ""


def exact_count(text: str, tokenizer_dir: Path) -> int:
    tok = load_tokenizer(str(Path(tokenizer_dir).resolve()))
    return len(tok(text, add_special_tokens=False)["input_ids"])
