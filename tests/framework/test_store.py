"""Cache keys and the artifact store (local and a non-local fsspec filesystem)."""

from __future__ import annotations

from pathlib import Path

import pytest

from stages.config import load_config
from stages.corpora.corpus_stats import CorpusStats
from stages.framework.keys import cache_key
from stages.framework.store import MARKER, ArtifactStore, MissingArtifactError
from stages.report.report import Report


def test_key_depends_on_declared_config_and_upstream_only():
    base = load_config([])
    k = cache_key(CorpusStats, base, {})
    assert k == cache_key(CorpusStats, load_config([]), {})  # deterministic
    assert k == cache_key(CorpusStats, load_config(["train.nugget.lr=0.5"]), {})  # undeclared
    assert k != cache_key(CorpusStats, load_config(["data.corpus_stats.top_words=5"]), {})
    assert cache_key(Report, base, {"corpus_stats": "a"}) != cache_key(Report, base, {"corpus_stats": "b"})


def test_key_depends_on_stage_code(monkeypatch):
    from stages.framework import code_identity

    cfg = load_config([])
    before = cache_key(Report, cfg, {"corpus_stats": "a"})
    version = Report.version
    monkeypatch.setattr(Report, "version", version + ".1")
    assert cache_key(Report, cfg, {"corpus_stats": "a"}) != before
    monkeypatch.setattr(Report, "version", version)
    assert cache_key(Report, cfg, {"corpus_stats": "a"}) == before
    # the code digest (of the stage module's import closure) is part of the key
    monkeypatch.setattr(code_identity, "closure_digest", lambda m: "0" * 64)
    assert cache_key(Report, cfg, {"corpus_stats": "a"}) != before


def _write(scratch: Path) -> None:
    (scratch / "sub").mkdir()
    (scratch / "sub" / "data.txt").write_text("payload")


def test_local_publish_is_atomic_and_complete(tmp_path):
    store = ArtifactStore(str(tmp_path / "root"))
    scratch = store.scratch("s", "k1")
    _write(scratch)
    assert not store.is_complete("s", "k1")
    with pytest.raises(MissingArtifactError, match="stage 's' has no completed output for key k1"):
        store.artifact("s", "k1")
    store.publish("s", "k1", scratch, {"metrics": {"m": 1.0}})
    art = store.artifact("s", "k1")
    assert art.file("sub/data.txt").read_text() == "payload"
    assert art.manifest["metrics"] == {"m": 1.0}
    assert not scratch.exists()
    assert [p.name for p in (tmp_path / "root" / "s").iterdir()] == ["k1"]


def test_existing_output_kept_unless_forced(tmp_path):
    store = ArtifactStore(str(tmp_path))
    first = store.scratch("s", "k")
    (first / "v").write_text("1")
    store.publish("s", "k", first, {})
    second = store.scratch("s", "k")
    (second / "v").write_text("2")
    store.publish("s", "k", second, {})
    assert store.artifact("s", "k").file("v").read_text() == "1"
    third = store.scratch("s", "k")
    (third / "v").write_text("3")
    store.publish("s", "k", third, {"forced": True})
    assert store.artifact("s", "k").file("v").read_text() == "3"


def test_remote_root_marker_written_last_and_downloaded(tmp_path):
    import fsspec

    store = ArtifactStore("memory://nugget-test", cache_dir=tmp_path / "cache")
    assert not store.local
    scratch = store.scratch("s", "k")
    _write(scratch)
    # a crashed upload: files without the marker never count as complete
    fs = fsspec.filesystem("memory")
    fs.pipe("/nugget-test/s/k/sub/data.txt", b"partial")
    assert not store.is_complete("s", "k")
    uri = store.publish("s", "k", scratch, {"metrics": {}})
    assert uri == "memory://nugget-test/s/k"
    assert fs.exists(f"/nugget-test/s/k/{MARKER}")
    art = store.artifact("s", "k")
    assert art.path.is_relative_to(tmp_path / "cache")
    assert art.file("sub/data.txt").read_text() == "payload"
    fs.rm("/nugget-test", recursive=True)
