"""Unit tests of the preflight's GPU, hub and disk checks (`stages.framework.preflight_device`,
`preflight_hub`, `preflight_disk`); the CLI cases are in tests/framework/test_preflight_late.py."""

from __future__ import annotations

import shutil
import time
import urllib.error
import urllib.request
from collections import namedtuple
from pathlib import Path
from types import SimpleNamespace

import pytest

from stages.config import load_config
from stages.framework import preflight_device, preflight_disk, preflight_hub
from stages.registry import DAG

Usage = namedtuple("Usage", "total used free")
GIB = 1 << 30


@pytest.fixture
def local_run(monkeypatch):
    for name in ("RAY_ADDRESS", "NUGGET_CLUSTER_RESOURCES"):
        monkeypatch.delenv(name, raising=False)


@pytest.mark.parametrize(("gpus", "refused"), [(0, True), (1, False)])
def test_cuda_is_checked_against_the_gpus_torch_sees_on_a_local_run(gpus, refused, local_run, monkeypatch):
    monkeypatch.setattr(preflight_device, "local_gpus", lambda: float(gpus))
    found = preflight_device.device_problems(load_config(["run.device=cuda"]), [DAG.stages["eval_reconstruction"]])
    assert bool(found) == refused
    if refused:
        assert found[0].message.startswith("run.device='cuda': eval_reconstruction needs 1 GPU(s) at once but this "
                                           "machine (a local Ray; torch sees its CUDA devices) has 0")


def test_on_a_cluster_the_driver_s_gpus_are_not_asked(monkeypatch):
    monkeypatch.delenv("NUGGET_CLUSTER_RESOURCES", raising=False)
    monkeypatch.setenv("RAY_ADDRESS", "ray://head:10001")  # ray job submit: the workers may hold the GPUs
    monkeypatch.setattr(preflight_device, "local_gpus", lambda: pytest.fail("asked this machine's GPUs"))
    assert preflight_device.device_problems(load_config(["run.device=cuda"]), [DAG.stages["eval_reconstruction"]]) == []


def test_no_gpu_asked_imports_no_torch(local_run, monkeypatch):
    monkeypatch.setattr(preflight_device, "local_gpus", lambda: pytest.fail("torch imported for a CPU run"))
    assert preflight_device.device_problems(load_config([]), DAG.stages.values()) == []


def test_a_cached_hub_model_needs_no_hub(monkeypatch, tmp_path):
    for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(preflight_hub, "hub_unreachable", lambda *a, **k: pytest.fail("asked the hub"))
    monkeypatch.setattr(preflight_hub, "cached_hub_config", lambda name: tmp_path / "config.json")
    cfg = load_config(["model.lm.source=pretrained", "model.lm.name_or_path=org/model"])
    reads = preflight_hub.hub_reads(cfg, [DAG.stages["prepare_lm"]])
    assert [(r.field, r.repo, r.kind) for r in reads] == [("model.lm.name_or_path", "org/model", "model")]
    assert preflight_hub.hub_problems(cfg, [DAG.stages["prepare_lm"]]) == []


def test_every_hub_dataset_read_is_found():
    cfg = load_config(["data.lm.source=paper", "data.rr.source=wikitext103", "data.mt.source=wmt19",
                       "data.nugget_lm.source=wikitext103", "data.re.source=c4_realnewslike", "data.re.dev_fraction=0",
                       "data.lm.pile_files=/local/pile-*.jsonl"], check=False)  # a local copy: not from the hub
    found = {r.field: r.repo for r in preflight_hub.hub_reads(cfg, DAG.stages.values())}
    assert found == {"data.mt.local_files": "wmt19", "data.rr.local_files": "wikitext",
                     "data.lm.squad_files": "squad", "data.lm.cnn_files": "cnn_dailymail",
                     "data.lm.wiki_files": "wikitext", "data.nugget_lm.wiki_files": "wikitext",
                     "data.re.local_files": "allenai/c4"}


def test_a_dataset_in_the_datasets_cache_counts(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path))
    monkeypatch.setattr(preflight_hub, "_hub_cache", lambda: None)
    assert not preflight_hub.dataset_cached("allenai/c4") and not preflight_hub.dataset_cached("wikitext")
    (tmp_path / "allenai___c4").mkdir()
    (tmp_path / "Salesforce___wikitext").mkdir()  # a canonical name the hub moved under an owner
    assert preflight_hub.dataset_cached("allenai/c4") and preflight_hub.dataset_cached("wikitext")


def test_the_hub_probe_is_bounded(monkeypatch):
    def hangs(*args: object, **kwargs: object) -> None:  # a resolver that hangs, then fails as urlopen does
        time.sleep(5)
        raise urllib.error.URLError("resolved too late")

    # (a fake returning None made the abandoned probe thread raise in a later test's time)
    monkeypatch.setattr(urllib.request, "urlopen", hangs)
    start = time.monotonic()
    assert preflight_hub.hub_unreachable("https://hub.invalid", timeout=0.3) == "no answer within 0.3 s"
    assert time.monotonic() - start < 2


def _store(tmp_path: Path, sizes: dict[str, int]) -> SimpleNamespace:
    manifests = {n: [{"finished_at": "1", "files": {"old": [1, "x"]}},
                     {"finished_at": "2", "files": {"a": [b, "sha"], "b": [0, "sha"]}}] for n, b in sizes.items()}
    return SimpleNamespace(local=True, base=str(tmp_path / "root"), manifests=lambda n: manifests.get(n, []))


def test_free_space_covers_the_last_outputs_of_the_stages_to_run(tmp_path, monkeypatch):
    store = _store(tmp_path, {"train_nugget": 3 * GIB})
    running = [DAG.stages["train_nugget"], DAG.stages["corpus_stats"]]
    assert preflight_disk.output_bytes(store, "train_nugget") == 3 * GIB  # the latest output, not the first
    monkeypatch.setattr(shutil, "disk_usage", lambda path: Usage(10 * GIB, 9 * GIB, GIB))
    [problem] = preflight_disk.space_problems(store, running, None)
    assert problem.code == 2
    assert problem.message == (f"run.artifact_root (the last outputs of train_nugget and 256 MiB): {store.base} has "
                               f"1024 MiB free on its file system ({tmp_path}); the run needs about 3328 MiB there; "
                               "free space or move it")
    monkeypatch.setattr(shutil, "disk_usage", lambda path: Usage(10 * GIB, 6 * GIB, 4 * GIB))
    assert preflight_disk.space_problems(store, running, None) == []
    assert preflight_disk.space_problems(store, [], None) == []  # nothing to run: nothing written


def test_a_sqlite_store_on_another_file_system_is_checked_on_its_own(tmp_path, monkeypatch):
    store = _store(tmp_path, {})
    db = tmp_path / "db"
    db.mkdir()
    monkeypatch.setattr(preflight_disk, "_device", lambda path: 2 if path == db else 1)
    monkeypatch.setattr(shutil, "disk_usage", lambda path: Usage(GIB, GIB, 0 if path == db else GIB))
    [problem] = preflight_disk.space_problems(store, [DAG.stages["corpus_stats"]], db)
    assert problem.message.startswith(f"run.tracking_uri (its sqlite folder): {db} has 0 MiB free")
