"""The store under crashes, damage and concurrency: atomic replace, checksums, locks,
scratch sweeping (no Ray, no MLflow)."""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest

from stages.framework import store as store_mod
from stages.framework.locks import FileLock, LeaseLock, LockTimeout
from stages.framework.store import MANIFEST, ArtifactStore, CorruptArtifactError
from tests.framework.lock_holder import lock_held_elsewhere


def _publish(store: ArtifactStore, value: str, key: str = "k", forced: bool = False) -> None:
    scratch = store.scratch("s", key)
    (scratch / "v.txt").write_text(value)
    store.publish("s", key, scratch, {"forced": forced})


def test_forced_replace_swaps_in_one_step(tmp_path):
    store = ArtifactStore(str(tmp_path))
    _publish(store, "old")
    _publish(store, "new", forced=True)
    assert store.artifact("s", "k").file("v.txt").read_text() == "new"
    assert sorted(p.name for p in (tmp_path / "s").iterdir()) == ["k"]  # old one gone


def test_replace_cut_between_renames_is_undone(tmp_path, monkeypatch):
    """Without an atomic exchange the old output is renamed aside first: killed right after,
    the next access finds the aside copy and puts it back."""
    store = ArtifactStore(str(tmp_path))
    _publish(store, "old")
    monkeypatch.setattr(store_mod, "_exchange", lambda a, b: False)
    real_rename = os.rename

    def crash_on_second(src, dst):
        if ".tmp-" in str(src):
            raise KeyboardInterrupt("killed between the renames")
        real_rename(src, dst)

    monkeypatch.setattr(store_mod.os, "rename", crash_on_second)
    with pytest.raises(KeyboardInterrupt):
        _publish(store, "new", forced=True)
    monkeypatch.setattr(store_mod.os, "rename", real_rename)
    assert not (tmp_path / "s" / "k").exists()  # the moment of the crash: only .old-* and .tmp-*
    held = store.lock("s", "k")
    assert held.try_acquire()  # while a publisher holds the key, a reader does not "recover"
    assert not store.is_complete("s", "k") and not (tmp_path / "s" / "k").exists()
    held.release()
    assert store.is_complete("s", "k")  # recovered on access
    assert store.artifact("s", "k").file("v.txt").read_text() == "old"
    store.sweep("s")
    assert sorted(p.name for p in (tmp_path / "s").iterdir()) == ["k"]


def test_sweep_recovers_a_cut_replace_before_removing_leftovers(tmp_path, monkeypatch):
    store = ArtifactStore(str(tmp_path))
    _publish(store, "old")
    (tmp_path / "s" / "k").rename(tmp_path / "s" / ".old-k-1234abcd")  # cut right after the first rename
    assert store.sweep("s") == []  # the set-aside output is put back, not swept
    assert store.artifact("s", "k").file("v.txt").read_text() == "old"


def test_damaged_output_is_named_and_replanned(tmp_path):
    store = ArtifactStore(str(tmp_path))
    _publish(store, "payload")
    out = tmp_path / "s" / "k" / "v.txt"
    out.write_text("PAYLOAD")  # same size, other bytes: found by the readers' hash check
    with pytest.raises(CorruptArtifactError, match=r"stage 's' \(key k\).*v.txt: content differs.*--force"):
        store.artifact("s", "k")
    out.write_text("pay")  # truncated: found by the planner's size check -> a miss
    assert store.state("s", "k") == (False, "damaged: v.txt: 3 bytes, published with 7")
    _publish(store, "payload")  # a damaged output is replaced even without --force
    assert store.artifact("s", "k").file("v.txt").read_text() == "payload"
    (tmp_path / "s" / "k" / MANIFEST).write_text("{not json")
    complete, why = store.state("s", "k")
    assert not complete and why.startswith("damaged: _nugget_manifest.json unreadable")


def test_remote_copy_is_checked(tmp_path):
    import fsspec

    store = ArtifactStore("memory://safety", cache_dir=tmp_path / "cache")
    scratch = store.scratch("s", "k")
    (scratch / "v.txt").write_text("payload")
    store.publish("s", "k", scratch, {})
    fs = fsspec.filesystem("memory")
    fs.pipe("/safety/s/k/v.txt", b"PAYLOAD")  # damaged in the bucket after publishing
    with pytest.raises(CorruptArtifactError, match="v.txt: content differs"):
        store.artifact("s", "k")
    assert not (tmp_path / "cache" / "s" / "k").exists()  # a bad copy never lands in the cache
    fs.rm("/safety", recursive=True)


def test_sweep_spares_scratch_of_a_key_being_computed(tmp_path):
    store = ArtifactStore(str(tmp_path))
    busy, idle = store.lock("s", "busy"), None
    assert busy.try_acquire()
    live = store.scratch("s", "busy")
    dead = (tmp_path / "s" / ".tmp-idle-1234abcd")
    dead.mkdir()
    idle = store.sweep("s")
    assert idle == [str(dead)] and live.exists()
    busy.release()
    assert store.sweep("s") == [str(live)]


def test_file_lock_is_released_when_its_process_is_killed(tmp_path):
    path = tmp_path / "k.compute"
    with lock_held_elsewhere(path) as holder:
        mine = FileLock(str(path))
        assert not mine.try_acquire()
        seen: list[str] = []
        with pytest.raises(LockTimeout, match=f"held by .*:{holder.pid}"):
            mine.acquire(on_wait=seen.append, timeout=1)
        assert seen and f":{holder.pid} since" in seen[0]
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait()
        mine.acquire(None, timeout=5)
        mine.release()


def test_read_lock_makes_a_forced_replace_wait_for_readers(tmp_path):
    store = ArtifactStore(str(tmp_path))
    _publish(store, "old")
    reader = store.read_lock("s", "k")
    reader.acquire(None, timeout=5)
    done = threading.Event()
    writer = threading.Thread(target=lambda: (_publish(store, "new", forced=True), done.set()))
    writer.start()
    time.sleep(1.0)
    assert not done.is_set()  # the replace waits for the reader
    assert store.artifact("s", "k").file("v.txt").read_text() == "old"
    reader.release()
    writer.join(timeout=10)
    assert store.artifact("s", "k").file("v.txt").read_text() == "new"


def test_lease_lock_on_an_object_store(monkeypatch):
    import fsspec

    from stages.framework import locks

    monkeypatch.setattr(locks, "POLL_SECONDS", 0.01)
    fs = fsspec.filesystem("memory")
    first = LeaseLock(fs, "/leases/k.lease.json", lease_seconds=0.3)
    second = LeaseLock(fs, "/leases/k.lease.json", lease_seconds=0.3)
    assert first.try_acquire() and not second.try_acquire()
    first._stop.set()  # its owner dies: no more renewals
    time.sleep(0.4)
    assert second.try_acquire()  # an expired lease is taken over
    second.release()
    assert not fs.exists("/leases/k.lease.json")
