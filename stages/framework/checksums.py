"""Sizes and sha256 of the files of a published output, and the check of a copy against them.

The store writes the table into the manifest when it publishes and checks it when a stage
reads its inputs, so a truncated, edited or half-copied cached output is named as such
(stage, key, file) instead of failing deep inside a reader. The planner checks sizes only
(one ``stat`` per file); readers check the bytes. A hash costs ~1 s per GB on one core,
and each process hashes a given file version (path, size, mtime) once.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

FileTable = dict[str, list]  # relative posix path -> [size in bytes, sha256 hex]

_digests: dict[tuple[str, int, int], str] = {}  # (path, size, mtime_ns) -> sha256, per process


def sha256_of(path: Path) -> str:
    st = path.stat()
    memo = (str(path), st.st_size, st.st_mtime_ns)
    if memo not in _digests:
        with path.open("rb") as fh:
            _digests[memo] = hashlib.file_digest(fh, "sha256").hexdigest()
    return _digests[memo]


def file_table(root: Path, skip: frozenset[str] = frozenset()) -> FileTable:
    """``{relative path: [size, sha256]}`` of every file under ``root`` but ``skip`` names
    at its top level."""
    table: FileTable = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if path.is_file() and rel not in skip:
            table[rel] = [path.stat().st_size, sha256_of(path)]
    return table


def damage(root: Path, table: FileTable, hashes: bool = True) -> list[str]:
    """What differs between the files under ``root`` and ``table`` (empty: intact).
    ``hashes=False`` compares sizes only."""
    problems: list[str] = []
    for rel, (size, digest) in sorted(table.items()):
        path = root / rel
        if not path.is_file():
            problems.append(f"{rel}: missing")
        elif path.stat().st_size != size:
            problems.append(f"{rel}: {path.stat().st_size} bytes, published with {size}")
        elif hashes and sha256_of(path) != digest:
            problems.append(f"{rel}: content differs from the published sha256")
    return problems
