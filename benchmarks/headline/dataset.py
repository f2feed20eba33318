"""The burst's data folder: one writer, one reader (`HeadlineData`).

It travels to a GPU machine inside an 8 MiB share of a 64 MiB transfer, so it holds token
ids, not text: ``docs.npz`` (per split ``<split>_ids`` uint16, every document's ids end to end,
and ``<split>_offsets`` int64, where each document starts and ends), the tokenizer the ids
belong to (``tokenizer/``; files over 64 KiB gzipped), and ``manifest.json`` (format, sources,
counts, token statistics, the build's settings and every file's size and sha256, checked on
read). The reference text of a document is its ids decoded, the same way its reconstruction
is decoded: both sides of a BLEU go through one detokeniser.
"""

from __future__ import annotations

import gzip
import json
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from stages.framework.checksums import sha256_of

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase

FORMAT = "nugget-headline-data/1"
SPLITS = ("train", "dev", "test")
DOCS = "docs.npz"
MANIFEST = "manifest.json"
TOKENIZER = "tokenizer"
GZIP_OVER = 64 * 1024  # tokenizer files larger than this travel gzipped
MAX_ID = np.iinfo(np.uint16).max


@dataclass
class Split:
    """Documents of one split: ``ids [total tokens]`` uint16 and ``offsets [n + 1]``."""

    ids: np.ndarray
    offsets: np.ndarray

    @classmethod
    def of(cls, docs: list[list[int]]) -> Split:
        if any(t < 0 or t > MAX_ID for d in docs for t in d):
            raise ValueError(f"token ids must fit uint16 (0..{MAX_ID})")
        lengths = np.array([len(d) for d in docs], dtype=np.int64)
        offsets = np.concatenate([np.zeros(1, dtype=np.int64), np.cumsum(lengths)])
        flat = np.fromiter((t for d in docs for t in d), dtype=np.uint16, count=int(offsets[-1]))
        return cls(flat, offsets)

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def doc(self, i: int) -> list[int]:
        return self.ids[self.offsets[i] : self.offsets[i + 1]].astype(np.int64).tolist()

    def docs(self, limit: int = 0, max_tokens: int = 0) -> list[list[int]]:
        """The first ``limit`` documents (0: all), each cut to ``max_tokens`` (0: whole)."""
        n = min(limit, len(self)) if limit else len(self)
        return [d[:max_tokens] if max_tokens else d for d in map(self.doc, range(n))]

    def lengths(self) -> np.ndarray:
        return np.diff(self.offsets)


def token_stats(split: Split) -> dict[str, float]:
    """Counts and length statistics of a split's documents (subwords, specials excluded)."""
    n = split.lengths()
    if not len(n):
        return {"documents": 0, "tokens": 0}
    return {"documents": len(n), "tokens": int(n.sum()), "mean": float(n.mean()), "median": float(np.median(n)),
            "p90": float(np.percentile(n, 90)), "min": int(n.min()), "max": int(n.max())}


@dataclass
class HeadlineData:
    """Token-id documents per split, their tokenizer's files and what built them."""

    splits: dict[str, Split]
    tokenizer_files: dict[str, bytes]  # file name -> content, as `save_pretrained` wrote it
    meta: dict[str, Any] = field(default_factory=dict)  # sources, settings, build notes

    def write(self, folder: Path) -> dict[str, Any]:
        """Write the folder (module docstring); returns the manifest."""
        folder.mkdir(parents=True, exist_ok=True)
        arrays = {f"{s}_{part}": getattr(self.splits[s], part) for s in SPLITS for part in ("ids", "offsets")}
        np.savez_compressed(folder / DOCS, **arrays)
        (folder / TOKENIZER).mkdir(exist_ok=True)
        for name, content in self.tokenizer_files.items():
            if len(content) > GZIP_OVER:
                (folder / TOKENIZER / f"{name}.gz").write_bytes(gzip.compress(content, mtime=0))
            else:
                (folder / TOKENIZER / name).write_bytes(content)
        files = sorted(p for p in folder.rglob("*") if p.is_file() and p.name != MANIFEST)
        manifest = {"format": FORMAT, **self.meta,
                    "splits": {s: token_stats(self.splits[s]) for s in SPLITS},
                    "files": {str(p.relative_to(folder)): {"bytes": p.stat().st_size, "sha256": sha256_of(p)}
                              for p in files}}
        (folder / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n")
        manifest["total_bytes"] = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())
        return manifest

    @classmethod
    def read(cls, folder: Path, verify: bool = True) -> HeadlineData:
        """The folder `write` wrote; with ``verify`` every file's sha256 is checked first (a
        truncated transfer fails here, naming the file, not later as a confusing model error)."""
        manifest = json.loads((folder / MANIFEST).read_text())
        if manifest.get("format") != FORMAT:
            raise ValueError(f"{folder}: format {manifest.get('format')!r}, expected {FORMAT!r}")
        if verify:
            for name, entry in manifest["files"].items():
                path = folder / name
                if not path.is_file() or sha256_of(path) != entry["sha256"]:
                    raise ValueError(f"{path}: missing or not the file the manifest names (sha256 differs)")
        with np.load(folder / DOCS) as z:
            splits = {s: Split(z[f"{s}_ids"], z[f"{s}_offsets"]) for s in SPLITS}
        files = {}
        for path in sorted((folder / TOKENIZER).iterdir()):
            data = path.read_bytes()
            files[path.name.removesuffix(".gz")] = gzip.decompress(data) if path.suffix == ".gz" else data
        meta = {k: v for k, v in manifest.items() if k not in ("format", "splits", "files")}
        return cls(splits, files, meta)

    def train_and_test(self, max_tokens: int, test_limit: int) -> tuple[list[list[int]], list[list[int]], list[str]]:
        """The training documents and the first ``test_limit`` held-out ones, each cut to
        ``max_tokens``, and the held-out documents' ids (the units of every interval)."""
        train = self.splits["train"].docs(max_tokens=max_tokens)
        test = self.splits["test"].docs(limit=test_limit, max_tokens=max_tokens)
        return train, test, [f"test-{i}" for i in range(len(test))]

    def tokenizer(self) -> PreTrainedTokenizerBase:
        """The tokenizer the ids belong to (loaded from a temporary copy of its files)."""
        from transformers import AutoTokenizer

        with tempfile.TemporaryDirectory(prefix="headline-tok-") as tmp:
            for name, content in self.tokenizer_files.items():
                (Path(tmp) / name).write_bytes(content)
            return AutoTokenizer.from_pretrained(tmp, trust_remote_code=False)
