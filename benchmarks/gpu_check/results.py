"""A call's results as the few files the device returns: ``callN-results.tar.gz`` (every
log, status, benchmark result and stage table of the call) and ``callN-summary.md``.

The machine returns at most 8 files of 16 MiB each. A text file over the cap is cut from
the middle (its head and tail kept: where a run started and how it ended), saying so in
the file; a larger binary file is left out and listed in ``left_out.txt``. If the archive
is still too large, the caps are halved until it fits.
"""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

from benchmarks.gpu_check.limits import RETURN_FILE_BYTES

TEXT_SUFFIXES = {".log", ".txt", ".md", ".json", ".jsonl", ".csv", ".xml", ".yaml", ".out"}
FILE_CAP = 4 * 2**20
ARCHIVE_LIMIT = RETURN_FILE_BYTES - 2**20  # the summary and tar overhead stay well inside


def archive_name(call: int) -> str:
    return f"call{call}-results.tar.gz"


def summary_name(call: int) -> str:
    return f"call{call}-summary.md"


def cut_middle(data: bytes, cap: int) -> bytes:
    """``data`` cut to about ``cap`` bytes, its head and tail kept, the cut said in the middle."""
    if len(data) <= cap:
        return data
    half = cap // 2
    note = (f"\n\n[gpu-check: {len(data) - 2 * half:,} bytes cut from the middle of this "
            f"{len(data):,}-byte file to fit the 16 MiB per returned file]\n\n").encode()
    return data[:half] + note + data[-half:]


def build_archive(work: Path, cap: int) -> tuple[bytes, list[str]]:
    """The tar.gz of ``work`` (paths relative to it), text files over ``cap`` cut; (bytes, left out)."""
    buffer, left_out = io.BytesIO(), []
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for path in sorted(p for p in work.rglob("*") if p.is_file()):
            rel = path.relative_to(work).as_posix()
            size = path.stat().st_size
            if size > cap and path.suffix not in TEXT_SUFFIXES:
                left_out.append(f"{rel} ({size:,} bytes: a binary file over the {cap:,}-byte cap)")
                continue
            data = cut_middle(path.read_bytes(), cap) if size > cap else path.read_bytes()
            info = tarfile.TarInfo(rel)
            info.size, info.mtime, info.mode = len(data), int(path.stat().st_mtime), 0o644
            tar.addfile(info, io.BytesIO(data))
        if left_out:
            note = ("\n".join(left_out) + "\n").encode()
            info = tarfile.TarInfo("left_out.txt")
            info.size = len(note)
            tar.addfile(info, io.BytesIO(note))
    return buffer.getvalue(), left_out


def write_results(work: Path, out: Path, call: int, summary: str, limit: int = ARCHIVE_LIMIT,
                  cap: int = FILE_CAP) -> list[Path]:
    """Write the call's archive and summary into ``out``; the caps halve until the archive fits."""
    out.mkdir(parents=True, exist_ok=True)
    while True:
        data, _ = build_archive(work, cap)
        if len(data) <= limit or cap <= 4096:
            break
        cap //= 2
    archive = out / archive_name(call)
    archive.write_bytes(data)
    summary_path = out / summary_name(call)
    summary_path.write_text(summary)
    return [archive, summary_path]
