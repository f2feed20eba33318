"""Strict text decoding shared by the file-based readers: bad bytes name the file."""

from __future__ import annotations

from pathlib import Path


def read_utf8(path: Path) -> str:
    data = Path(path).read_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path}: not valid UTF-8 at byte {exc.start}") from exc
