"""Inputs read by path are keyed by their content (`stages.framework.external`): a file
replaced at the same path is a miss, an untouched one stays a hit, a hub id is keyed by
the id, and a declared path that is not there fails at planning naming the field."""

from __future__ import annotations

import os
import zipfile
from pathlib import Path

import pytest

from stages.config import load_config
from stages.corpora.corpus_stats import CorpusStats
from stages.framework import external
from stages.framework.dag import Dag, MissingInputError
from stages.framework.external import ABSENT, ExternalInputError, external_fingerprints
from stages.framework.keys import cache_key, external_inputs, stage_sections
from stages.framework.stage import Stage, StageContext
from stages.framework.store import ArtifactStore
from stages.nugget.tokenizer import Tokenizer
from stages.sources.registry import SOURCES, get
from tests.framework.fixtures import make_fake_sources


class ReadsFolder(Stage):
    """Reads a nugget-data folder named by a config field (as eval_similarity does)."""

    name = "reads_folder"
    config_keys = ("eval.pi_data_dir",)
    external_paths = ("eval.pi_data_dir",)

    def run(self, ctx: StageContext) -> None:  # pragma: no cover - planned, never run here
        raise AssertionError("planning only")


@pytest.fixture
def fixed_code(monkeypatch):
    """The test stages' code version held fixed (their module's import closure is the
    whole registry: slow to hash, and beside the point here)."""
    from stages.framework import keys

    monkeypatch.setattr(keys, "code_version", lambda stage_cls: f"{stage_cls.version}:test")


def _nugget_data(folder: Path, candidates: str = "R0") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "docs.txt").write_text("Q0\tthe query\nR0\tthe answer\n")
    (folder / "task.jsonl").write_text(f'{{"query": "Q0", "candidates": ["{candidates}"]}}\n')
    return folder


def _published(store: ArtifactStore, stage: str, key: str) -> None:
    scratch = store.scratch(stage, key)
    (scratch / "out.txt").write_text("done")
    store.publish(stage, key, scratch, {"metrics": {}})


def _plan_status(dag: Dag, args: list[str], store: ArtifactStore) -> dict[str, str]:
    return {p.name: p.status for p in dag.plan(load_config(args), store)}


def test_replacing_a_file_at_the_same_path_turns_a_hit_into_a_miss(tmp_path, fixed_code):
    folder = _nugget_data(tmp_path / "pi")
    args = [f"eval.pi_data_dir={folder}", f"run.sources_dir={tmp_path / 'sources'}"]
    dag, store = Dag([ReadsFolder]), ArtifactStore(str(tmp_path / "root"))
    key = dag.plan(load_config(args), store)[0].key
    _published(store, "reads_folder", key)
    assert _plan_status(dag, args, store) == {"reads_folder": "hit"}

    task = folder / "task.jsonl"
    os.utime(task, ns=(1, 1))  # touched: same bytes, another mtime
    assert _plan_status(dag, args, store) == {"reads_folder": "hit"}
    stat = task.stat()
    _nugget_data(folder, candidates="R1")  # same size, same path
    os.utime(task, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # and even the old mtime
    assert task.stat().st_size == stat.st_size
    assert _plan_status(dag, args, store) == {"reads_folder": "miss"}
    _nugget_data(folder)  # the original content again: the original key, a hit
    assert _plan_status(dag, args, store) == {"reads_folder": "hit"}
    (folder / "extra.txt").write_text("a new file in the folder")
    assert _plan_status(dag, args, store) == {"reads_folder": "miss"}


def test_large_files_are_keyed_by_size_and_mtime(tmp_path, monkeypatch):
    monkeypatch.setattr(external, "SMALL_FILE_BYTES", 8)  # "large" = 8 bytes and more
    weights = tmp_path / "model" / "weights.bin"
    weights.parent.mkdir()
    weights.write_bytes(b"0123456789")
    os.utime(weights, ns=(10**18, 10**18))
    before = external.path_fingerprint(weights.parent)
    weights.write_bytes(b"abcdefghij")  # same size; the mtime moves with the write
    assert external.path_fingerprint(weights.parent) != before
    os.utime(weights, ns=(10**18, 10**18))  # a copy that preserves times is not seen
    assert external.path_fingerprint(weights.parent) == before


def test_offline_sources_enter_the_key_of_the_stages_that_read_them(tmp_path):
    sources = make_fake_sources(tmp_path / "sources")
    cfg = load_config([f"run.sources_dir={sources}"])
    key = cache_key(CorpusStats, cfg, {})
    assert external_inputs(CorpusStats, cfg) == {"sources/gensim_lee": external_inputs(CorpusStats, cfg)["sources/gensim_lee"]}
    # another source fetched beside it: corpus_stats (gensim_lee) does not read it
    other = sources / get("python_docs").folder("python3.11-doc")
    other.mkdir(parents=True)
    (other / ".complete").write_text("python3.11-doc\n")
    assert cache_key(CorpusStats, cfg, {}) == key
    # the wheel it reads, replaced by another with other documents: a miss
    make_fake_sources(sources, lee_docs=["A different first document.", "And a second one."])
    assert cache_key(CorpusStats, cfg, {}) != key
    # not fetched: no error at planning (the run reports the fetch command), another key
    missing = load_config([f"run.sources_dir={tmp_path / 'nowhere'}"])
    assert external_inputs(CorpusStats, missing) == {"sources/gensim_lee": ABSENT}


def test_a_hub_id_is_keyed_by_the_id_and_a_local_model_by_its_files(tmp_path):
    pretrained = ["model.seq2seq.source=pretrained", f"run.sources_dir={tmp_path / 'sources'}"]
    hub = load_config([*pretrained, "model.seq2seq.name_or_path=facebook/bart-large"])
    assert external_inputs(Tokenizer, hub) == {}
    other_hub = load_config([*pretrained, "model.seq2seq.name_or_path=facebook/bart-base"])
    assert cache_key(Tokenizer, hub, {}) != cache_key(Tokenizer, other_hub, {})  # the id is in the config

    model = tmp_path / "bart"
    model.mkdir()
    (model / "config.json").write_text('{"d_model": 16}')
    local = load_config([*pretrained, f"model.seq2seq.name_or_path={model}"])
    key = cache_key(Tokenizer, local, {})
    assert set(external_inputs(Tokenizer, local)) == {"model.seq2seq.name_or_path"}
    (model / "config.json").write_text('{"d_model": 32}')
    assert cache_key(Tokenizer, local, {}) != key


@pytest.mark.parametrize(("stage", "settings", "field", "what"), [
    (ReadsFolder, ["eval.pi_data_dir={tmp}/no-such-folder"], "eval.pi_data_dir", "does not exist"),
    (Tokenizer, ["data.mt.local_files={tmp}/wmt/{{split}}-*.parquet"], "data.mt.local_files", "matches no file"),
    (Tokenizer, ["model.seq2seq.source=pretrained", "model.seq2seq.name_or_path={tmp}/no-such-model"],
     "model.seq2seq.name_or_path", "does not exist"),
    (Tokenizer, ["model.seq2seq.source=pretrained", "model.seq2seq.name_or_path=./no-such-model"],
     "model.seq2seq.name_or_path", "does not exist"),  # a relative path, not a hub id
])
def test_a_missing_path_fails_at_planning_naming_the_field_and_the_path(tmp_path, fixed_code, stage, settings, field,
                                                                        what):
    settings = [s.format(tmp=tmp_path) for s in settings]
    value = settings[-1].split("=", 1)[1]
    cfg = load_config([*settings, f"run.sources_dir={tmp_path / 'sources'}"])
    with pytest.raises(MissingInputError) as err:
        Dag([stage]).plan(cfg, ArtifactStore(str(tmp_path / "root")))
    assert f"{field}={value!r} {what} (read by {stage.name})" in str(err.value)
    assert [(m.field, m.value, m.stages) for m in err.value.missing] == [(field, value, (stage.name,))]
    with pytest.raises(ExternalInputError, match=f"stage {stage.name!r} reads {field}="):  # keyed alone
        external_inputs(stage, cfg)


def test_fingerprints_of_files_are_cached_per_process(tmp_path):
    folder = _nugget_data(tmp_path / "pi")
    sections = {"eval.pi_data_dir": str(folder)}
    first = external_fingerprints(ReadsFolder, sections, tmp_path)
    reads = external._content.cache_info().misses
    assert external_fingerprints(ReadsFolder, sections, tmp_path) == first
    assert external._content.cache_info().misses == reads  # nothing read again


def test_every_stage_declares_fields_it_reads_and_known_sources(tmp_path):
    """The declarations of the registered stages resolve inside their config sections,
    for the profiles' settings, and name only registered offline sources."""
    from stages.registry import DAG

    readers: dict[str, set[str]] = {}
    for profile in ("tiny", "paper"):
        cfg = load_config([f"profile={profile}"])
        for stage in DAG.stages.values():
            sections = stage_sections(stage, cfg)
            assert set(stage.offline_sources(sections)) <= set(SOURCES), stage.name
            for field in (*stage.external_paths, *stage.external_models):
                assert any(field == k or field.startswith(k + ".") for k in stage.config_keys), (stage.name, field)
            if stage.offline_sources(sections):
                readers.setdefault(profile, set()).add(stage.name)
    # the tiny profile reads only offline corpora; the paper profile reads hub and local data
    assert readers["tiny"] == {"corpus_stats", "tokenizer", "build_mt_docs", "build_pi", "build_rr", "prepare_lm",
                               "build_lm", "build_nugget_lm", "build_re_data", "build_re_downstream"}
    assert readers["paper"] < readers["tiny"]


def test_a_glob_is_keyed_by_every_file_it_matches(tmp_path):
    data = tmp_path / "wmt"
    data.mkdir()
    for split in ("train", "validation"):
        with zipfile.ZipFile(data / f"{split}-0.parquet", "w") as zf:  # any bytes: not parsed here
            zf.writestr("x", split)
    pattern = f"{data}/{{split}}-*.parquet"
    first = external.input_fingerprint("build_mt_docs", "data.mt.local_files", pattern)
    (data / "validation-0.parquet").write_bytes(b"replaced")
    assert external.input_fingerprint("build_mt_docs", "data.mt.local_files", pattern) != first
