"""Subword counts of many texts on Ray Data, with the tokenizer of the model trained;
`encode_with_words` also marks each token's word (start, out-of-vocabulary) for
word-level perplexity.

Counts exclude special tokens (``<s>``/``</s>`` are added by the model's collator), so a
"document of at most 128 subwords" has at most 128 content subwords. Workers load the
tokenizer once per process from the tokenizer stage's folder (an absolute path: Ray
Data tasks may run on other nodes of a cluster with shared storage).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from functools import lru_cache, partial
from pathlib import Path
from typing import Any

from stages.common.words import NO_WORD, token_words, word_spans

# the JSON files of a saved HF tokenizer folder, checked in this order when loading fails
TOKENIZER_JSON_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json")


def broken_tokenizer_file(path: str) -> str | None:
    """'FILE: what is wrong' for the first JSON file of the tokenizer folder ``path`` that
    does not parse (a truncated or overwritten ``tokenizer.json``); None if all parse."""
    for name in TOKENIZER_JSON_FILES:
        file = Path(path) / name
        if not file.is_file():
            continue
        try:
            json.loads(file.read_text(encoding="utf-8"))
        except UnicodeDecodeError as exc:
            return f"{file}: not UTF-8 text (byte {exc.start})"
        except json.JSONDecodeError as exc:
            return f"{file}: not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})"
    return None


@lru_cache(maxsize=4)
def load_tokenizer(path: str):
    """The HF tokenizer saved in folder ``path``, once per process. A folder it cannot load
    from raises a `ValueError` naming the folder and, when one is, the broken file (the
    bare error of the tokenizers library names neither)."""
    from transformers import AutoTokenizer

    try:
        return AutoTokenizer.from_pretrained(path, trust_remote_code=False)
    except Exception as exc:  # noqa: BLE001 (json, tokenizers, OSError...: all mean "cannot load it")
        what = broken_tokenizer_file(path) or f"{path}: cannot load a tokenizer from this folder"
        raise ValueError(f"tokenizer {what}; {type(exc).__name__}: {' '.join(str(exc).split())[:200]}") from exc


def _encode_batch(batch: dict[str, Any], tokenizer_dir: str) -> dict[str, Any]:
    tok = load_tokenizer(tokenizer_dir)
    ids = tok(list(batch["text"]), add_special_tokens=False)["input_ids"]
    return {"i": batch["i"], "ids": ids}


def encode_texts(texts: list[str], tokenizer_dir: Path, batch_size: int = 512) -> list[list[int]]:
    """Subword ids of each text, in input order (Ray Data map_batches; progress shown)."""
    import ray.data

    if not texts:
        return []
    load_tokenizer(str(Path(tokenizer_dir).resolve()))  # a broken folder fails here, not in a Ray Data task
    ds = ray.data.from_items([{"i": i, "text": t} for i, t in enumerate(texts)])
    out = ds.map_batches(  # Ray types its function as one of the batch alone: partial binds the folder
        partial(_encode_batch, tokenizer_dir=str(Path(tokenizer_dir).resolve())),
        batch_size=batch_size,
        batch_format="pandas",
    ).to_pandas()
    ids: list[list[int]] = [[] for _ in texts]
    for i, seq in zip(out["i"].tolist(), out["ids"].tolist(), strict=False):
        ids[i] = [int(t) for t in seq]
    return ids


OOV_WORD = "<unk>"  # WikiText-103 v1's out-of-vocabulary word


def word_flags(text: str, offsets: list[tuple[int, int]], ids: list[int], unk_id: int | None) -> tuple[list[bool], list[bool]]:
    """Per token of ``text``: whether it starts a word, and whether it belongs to an
    out-of-vocabulary word (the word is `OOV_WORD`, or one of its tokens is the
    tokenizer's unknown token). Words and the token each belongs to follow
    `stages.common.words` (a token of only whitespace belongs to the word after it), the
    convention of ``eval_lm``'s word perplexity too. Words are what word-level
    perplexity counts (Nugget §6.2: "we exclude all out-of-vocabulary tokens"; a word's
    probability is the product of its tokens')."""
    word_of = token_words(text, offsets)
    oov_words = {w for w, (a, b) in enumerate(word_spans(text)) if text[a:b] == OOV_WORD}
    oov_words |= {w for w, t in zip(word_of, ids, strict=True) if unk_id is not None and t == unk_id and w != NO_WORD}
    begins = [w != NO_WORD and (i == 0 or word_of[i - 1] != w) for i, w in enumerate(word_of)]
    return begins, [w in oov_words for w in word_of]


def _encode_words_batch(batch: dict[str, Any], tokenizer_dir: str) -> dict[str, Any]:
    tok = load_tokenizer(tokenizer_dir)
    texts = list(batch["text"])
    enc = tok(texts, add_special_tokens=False, return_offsets_mapping=True)
    starts, oov = [], []
    for text, ids, offs in zip(texts, enc["input_ids"], enc["offset_mapping"], strict=True):
        b, o = word_flags(text, [tuple(x) for x in offs], ids, tok.unk_token_id)
        starts.append(b)
        oov.append(o)
    return {"i": batch["i"], "ids": enc["input_ids"], "word_start": starts, "oov": oov}


def encode_with_words(texts: list[str], tokenizer_dir: Path, batch_size: int = 256) -> Iterator[dict[str, list]]:
    """Per text, in input order: ``ids``, ``word_start`` and ``oov`` (`word_flags`),
    tokenised on Ray Data and *streamed* to the caller a batch at a time, so a corpus of
    ~10^8 tokens (WikiText-103 train) never sits in the driver at once."""
    import ray.data

    if not texts:
        return
    load_tokenizer(str(Path(tokenizer_dir).resolve()))  # a broken folder fails here, not in a Ray Data task
    context = ray.data.DataContext.get_current()
    previous, context.execution_options.preserve_order = context.execution_options.preserve_order, True
    try:
        ds = ray.data.from_items([{"i": i, "text": t} for i, t in enumerate(texts)]).map_batches(
            partial(_encode_words_batch, tokenizer_dir=str(Path(tokenizer_dir).resolve())),
            batch_size=batch_size, batch_format="pandas",
        )
        expected = 0
        for batch in ds.iter_batches(batch_format="pandas", batch_size=None):
            for i, ids, starts, oov in zip(batch["i"], batch["ids"], batch["word_start"], batch["oov"], strict=True):
                if int(i) != expected:  # preserve_order is what keeps the articles' order
                    raise RuntimeError(f"encode_with_words: text {int(i)} arrived where {expected} was due")
                expected += 1
                yield {"ids": [int(t) for t in ids], "word_start": [bool(x) for x in starts],
                       "oov": [bool(x) for x in oov]}
    finally:
        context.execution_options.preserve_order = previous


def count_tokens(texts: list[str], tokenizer_dir: Path, batch_size: int = 512) -> list[int]:
    """Subword count of each text (see :func:`encode_texts`)."""
    return [len(ids) for ids in encode_texts(texts, tokenizer_dir, batch_size)]


def count_tokens_here(texts: list[str], tokenizer_dir: Path, batch_size: int = 2048) -> list[int]:
    """`count_tokens` in this process, without Ray: for callers outside the DAG that have no
    Ray instance to start (``benchmarks/headline``'s data pack), same counts."""
    tok = load_tokenizer(str(Path(tokenizer_dir).resolve()))
    out: list[int] = []
    for i in range(0, len(texts), batch_size):
        out += [len(ids) for ids in tok(texts[i : i + batch_size], add_special_tokens=False)["input_ids"]]
    return out


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
