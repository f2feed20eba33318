"""An output counts only where it was published, with the files it was published with:
folders moved or copied under another stage or key, manifests without a file table or with
entries outside the output, and a damaged upstream named as damaged (no Ray, no MLflow)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from pipelines.cli import main_stage
from stages.config import load_config
from stages.framework.store import MANIFEST, MARKER, ArtifactStore, CorruptArtifactError
from tests.framework.fake_stages import STATS_DAG


def _publish(store: ArtifactStore, stage: str, key: str, files: dict[str, str]) -> Path:
    scratch = store.scratch(stage, key)
    for name, text in files.items():
        (scratch / name).parent.mkdir(parents=True, exist_ok=True)
        (scratch / name).write_text(text)
    store.publish(stage, key, scratch, {})
    return Path(store.uri(stage, key))


def _edit_manifest(folder: Path, **changes: object) -> None:
    manifest = json.loads((folder / MANIFEST).read_text())
    for field, value in changes.items():
        if value is None:
            manifest.pop(field, None)
        else:
            manifest[field] = value
    (folder / MANIFEST).write_text(json.dumps(manifest))


def test_swapped_stage_folders_are_damaged_not_hits(tmp_path):
    """The probe's case: the `tokenizer` and `corpus_stats` key folders swapped by hand;
    each used to plan as a hit and be read as the other stage's output."""
    store = ArtifactStore(str(tmp_path))
    tok = _publish(store, "tokenizer", "aaa111", {"tokenizer.json": "{}"})
    stats = _publish(store, "corpus_stats", "bbb222", {"stats.json": '{"documents": 3}'})
    aside = tmp_path / "aside"
    os.rename(tok, aside)
    os.rename(stats, tok)
    os.rename(aside, stats)
    for stage, key, other in (("tokenizer", "aaa111", "corpus_stats"), ("corpus_stats", "bbb222", "tokenizer")):
        complete, why = store.state(stage, key)
        assert not complete
        assert f"names stage {other!r}, not the folder's {stage!r}" in why
        with pytest.raises(CorruptArtifactError, match="--force"):
            store.artifact(stage, key)


def test_a_key_folder_copied_under_another_key_is_damaged(tmp_path):
    """Copying a finished output under the key of another config "to save a rerun"."""
    store = ArtifactStore(str(tmp_path))
    done = _publish(store, "s", "k1", {"v.txt": "one"})
    shutil.copytree(done, tmp_path / "s" / "k2")
    complete, why = store.state("s", "k2")
    assert not complete
    assert f"{MARKER} names key 'k1', not the folder's k2" in why
    assert "names key 'k1', not the folder's 'k2'" in why
    assert store.state("s", "k1") == (True, "complete")


@pytest.mark.parametrize("files", [{}, None], ids=["empty-file-table", "no-file-table"])
def test_a_manifest_without_a_file_table_is_damaged(tmp_path, files):
    """The probe's case: ``files: {}`` and a file deleted planned as a hit, and the reader
    failed later inside the library that opened the missing file."""
    store = ArtifactStore(str(tmp_path))
    done = _publish(store, "tokenizer", "k", {"tokenizer.json": "{}", "vocab.txt": "a\nb\n"})
    _edit_manifest(done, files=files)
    (done / "tokenizer.json").unlink()
    complete, why = store.state("tokenizer", "k")
    assert not complete and f"{MANIFEST} lists no files" in why
    with pytest.raises(CorruptArtifactError, match="lists no files.*pipelines.stage tokenizer --force"):
        store.artifact("tokenizer", "k")


@pytest.mark.parametrize("entry", ["../../../../etc/hostname", "/etc/hostname", "a/../../x", ""])
def test_a_file_table_entry_outside_the_output_is_never_read(tmp_path, entry):
    """A manifest entry such as ``../../../../etc/hostname`` was stat'ed and hashed, and
    the message showed the size of that file."""
    store = ArtifactStore(str(tmp_path))
    done = _publish(store, "s", "k", {"v.txt": "x"})
    manifest = json.loads((done / MANIFEST).read_text())
    _edit_manifest(done, files={**manifest["files"], entry: [1, "0" * 64]})
    complete, why = store.state("s", "k")
    assert not complete and f"file table entry {entry!r}: not a path inside the output" in why
    assert "bytes" not in why
    with pytest.raises(CorruptArtifactError, match="not a path inside the output"):
        store.artifact("s", "k")


def test_a_symbolic_link_out_of_the_output_is_never_read(tmp_path):
    outside = tmp_path / "secret.txt"
    outside.write_text("secret")
    store = ArtifactStore(str(tmp_path / "root"))
    done = _publish(store, "s", "k", {"v.txt": "x"})
    (done / "link.txt").symlink_to(outside)
    manifest = json.loads((done / MANIFEST).read_text())
    _edit_manifest(done, files={**manifest["files"], "link.txt": [6, "0" * 64]})
    complete, why = store.state("s", "k")
    assert not complete and "link.txt: leads outside the output" in why


def test_publishing_under_a_manifest_of_another_key_is_refused(tmp_path):
    store = ArtifactStore(str(tmp_path))
    scratch = store.scratch("s", "k")
    with pytest.raises(ValueError, match="manifest of key 'other'"):
        store.publish("s", "k", scratch, {"key": "other"})


def test_a_damaged_upstream_is_named_as_damaged(root, base_args, capsys, no_ray):
    """The plan knew "damaged: manifest unreadable"; the stage rerun said the upstream had
    "no cached output for this config"."""
    cfg = load_config(base_args)
    store = ArtifactStore(cfg.run.artifact_root)
    key = next(p.key for p in STATS_DAG.plan(cfg, store, targets=["digest"]) if p.name == "corpus_stats")
    done = _publish(store, "corpus_stats", key, {"stats.json": "{}"})
    (done / MANIFEST).write_text("{not json")
    assert main_stage(["digest", *base_args], dag=STATS_DAG) == 3
    captured = capsys.readouterr()
    assert f"corpus_stats           miss   key={key}  upstream=-\n      (damaged: {MANIFEST} unreadable" in captured.out
    assert (f"upstream stage 'corpus_stats''s cached output for this config (key {key}) is damaged: "
            f"{MANIFEST} unreadable") in captured.err
    assert f"python -m pipelines.stage corpus_stats --force {' '.join(base_args)}" in captured.err
    assert "has no cached output" not in captured.err
