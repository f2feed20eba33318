"""Sizes and sha256 of the files of a published output, and the check of a copy against them.

The store writes the table into the manifest when it publishes and checks it when a stage
reads its inputs, so a truncated, edited or half-copied cached output is named as such
(stage, key, file) instead of failing deep inside a reader. The planner checks sizes only
(one ``stat`` per file); readers check the bytes. A hash costs time in proportion to the
bytes (docs/performance.md), so each process hashes a given file version (path, size, mtime) once.
"""

from __future__ import annotations

import hashlib
from pathlib import Path, PurePosixPath

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


def table_problems(table: dict) -> list[str]:
    """Entries of a file table that are not ``relative path -> [size, sha256]`` inside
    the output: an absolute path or one with ``..`` would make the checks stat and hash a
    file elsewhere (and print its size)."""
    problems: list[str] = []
    for rel, entry in sorted(table.items(), key=lambda item: str(item[0])):
        parts = PurePosixPath(rel).parts if isinstance(rel, str) else ()
        if not parts or rel.startswith("/") or "\\" in rel or any(p in ("..", ".") for p in parts):
            problems.append(f"file table entry {rel!r}: not a path inside the output")
        elif not (isinstance(entry, list) and len(entry) == 2 and isinstance(entry[0], int)
                  and isinstance(entry[1], str)):
            problems.append(f"file table entry {rel!r}: not [size, sha256]")
    return problems


def damage(root: Path, table: FileTable, hashes: bool = True) -> list[str]:
    """What differs between the files under ``root`` and ``table`` (empty: intact).
    ``hashes=False`` compares sizes only. Entries outside ``root`` (`table_problems`, or a
    symbolic link leading out) are reported, never read."""
    problems = table_problems(table)
    if problems:
        return problems
    inside = root.resolve()
    for rel, (size, digest) in sorted(table.items()):
        path = root / rel
        if not path.resolve().is_relative_to(inside):
            problems.append(f"{rel}: leads outside the output")
        elif not path.is_file():
            problems.append(f"{rel}: missing")
        elif path.stat().st_size != size:
            problems.append(f"{rel}: {path.stat().st_size} bytes, published with {size}")
        elif hashes and sha256_of(path) != digest:
            problems.append(f"{rel}: content differs from the published sha256")
    return problems
