"""A training run's storage (``ctx.work_uri``): a local folder or a URI every node reaches.

Used by the driver (download final models, drop a finished run's checkpoints) and by
workers (a trial or a finished system uploads its model), so that a multi-node run never
relies on one node's local disk.
"""

from __future__ import annotations

import shutil
from pathlib import Path


def copy_tree(src: str, dest: str) -> None:
    """Copy a directory (or one file) between local disk and the run's storage; either
    side may be a URI (a trial node uploads its model, the stage's node downloads every
    trial's)."""
    if "://" not in src + dest and Path(src).is_file():
        Path(dest).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(src, dest)
    elif "://" in dest:
        import fsspec

        fs, path = fsspec.core.url_to_fs(dest)
        fs.put(src, path, recursive=True)
    elif "://" in src:
        import fsspec

        fs, path = fsspec.core.url_to_fs(src)
        fs.get(path, dest, recursive=True)
    else:
        shutil.copytree(src, dest, dirs_exist_ok=True)


def exists(uri: str) -> bool:
    """Whether a file or folder exists in the storage."""
    if "://" in uri:
        import fsspec

        fs, path = fsspec.core.url_to_fs(uri)
        return bool(fs.exists(path))
    return Path(uri).exists()


def write_text(uri: str, text: str) -> None:
    """Write one small file (a completion marker) to the storage."""
    if "://" in uri:
        import fsspec

        with fsspec.open(uri, "w") as f:
            f.write(text)
    else:
        Path(uri).parent.mkdir(parents=True, exist_ok=True)
        Path(uri).write_text(text)


def clear_storage(storage: str, name: str) -> None:
    """Remove a finished (or forced-over) run's checkpoints."""
    if "://" in storage:
        import fsspec

        fs, path = fsspec.core.url_to_fs(f"{storage}/{name}")
        if fs.exists(path):
            fs.rm(path, recursive=True)
    else:
        shutil.rmtree(Path(storage) / name, ignore_errors=True)


def list_names(uri: str) -> list[str]:
    """The names of the entries directly under a folder of the storage ([] where it does not exist)."""
    if "://" in uri:
        import fsspec

        fs, path = fsspec.core.url_to_fs(uri)
        if not fs.exists(path):
            return []
        return [str(p).rstrip("/").rsplit("/", 1)[-1] for p in fs.ls(path, detail=False)]
    folder = Path(uri)
    return sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []
