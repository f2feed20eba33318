"""The burst's data folder: what is written is what is read, a damaged file is refused, and
the size limit drops training documents, never held-out ones."""

from __future__ import annotations

import json

import numpy as np
import pytest

from benchmarks.headline import dataset
from benchmarks.headline.build_data import split_documents, write_within
from benchmarks.headline.dataset import HeadlineData, Split
from benchmarks.headline.presets import DataPreset


def test_round_trip_keeps_documents_tokenizer_and_manifest(tiny_data, tmp_path, monkeypatch):
    folder, written = tiny_data
    read = HeadlineData.read(folder)
    for split in dataset.SPLITS:
        assert read.splits[split].docs() == written.splits[split].docs()
        assert read.splits[split].ids.dtype == np.uint16
    tok = read.tokenizer()
    text = "The river near the stone."
    assert tok(text)["input_ids"] == written.tokenizer()(text)["input_ids"]
    manifest = json.loads((folder / dataset.MANIFEST).read_text())
    assert manifest["splits"]["test"]["documents"] == 20 and manifest["splits"]["train"]["documents"] == 40
    assert manifest["splits"]["train"]["max"] == max(len(d) for d in written.splits["train"].docs())
    assert set(manifest["files"]) >= {dataset.DOCS, "tokenizer/tokenizer.json"}
    # a large file travels gzipped and comes back as written
    monkeypatch.setattr(dataset, "GZIP_OVER", 100)
    read.write(tmp_path / "gz")
    assert (tmp_path / "gz" / "tokenizer" / "tokenizer.json.gz").is_file()
    assert HeadlineData.read(tmp_path / "gz").tokenizer_files == read.tokenizer_files


def test_a_damaged_file_is_refused_by_name(tiny_data, tmp_path):
    folder, data = tiny_data
    data.write(tmp_path / "copy")
    path = tmp_path / "copy" / dataset.DOCS
    raw = bytearray(path.read_bytes())
    raw[-10] ^= 0xFF
    path.write_bytes(bytes(raw))
    with pytest.raises(ValueError, match="docs.npz"):
        HeadlineData.read(tmp_path / "copy")


def test_ids_must_fit_uint16():
    with pytest.raises(ValueError, match="uint16"):
        Split.of([[1, 70_000]])
    assert Split.of([[3, 4], [], [5]]).docs() == [[3, 4], [], [5]]


def test_held_out_documents_are_whole_and_disjoint_and_the_limit_drops_training_ones(tiny_data, tmp_path):
    _, data = tiny_data
    docs = [[i, i + 1, i + 2] * (1 + i % 4) for i in range(300)]
    splits = split_documents(docs, DataPreset(max_doc_tokens=16, test_docs=20, dev_docs=10, train_docs=0,
                                              max_bytes=1))
    assert [len(splits[s]) for s in ("test", "dev", "train")] == [20, 10, 270]
    seen = [tuple(d) for s in splits.values() for d in s]
    assert len(seen) == len(set(seen)) == 300
    full = write_within(tmp_path / "full", splits, data.tokenizer_files, {}, max_bytes=10**9)
    limit = full["total_bytes"] - 200
    cut = write_within(tmp_path / "cut", splits, data.tokenizer_files, {}, max_bytes=limit)
    assert cut["total_bytes"] <= limit
    assert cut["splits"]["test"]["documents"] == 20 and cut["splits"]["dev"]["documents"] == 10
    assert 0 < cut["splits"]["train"]["documents"] < 270
