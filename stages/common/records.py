"""JSON-lines records: ``build_lm``'s task records (``qa.jsonl``, ``summarization.jsonl``) for
the evaluations, and the writer every stage's ``*.jsonl`` output goes through."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any


def read_records(path: Path, split: str, limit: int) -> list[dict]:
    """Records of ``split`` in file order, at most ``limit`` (0 = all)."""
    records = [r for line in path.read_text().splitlines() if line.strip()
               for r in [json.loads(line)] if r["split"] == split]
    if not records:
        raise ValueError(f"{path.name} has no records in split {split!r}")
    return records[:limit] if limit else records


def batches(items: list, size: int) -> list[list]:
    return [items[i : i + size] for i in range(0, len(items), size)]


def stand_in_label(records: list[dict]) -> str:
    """The records' stand-in label ("" for the real datasets)."""
    labels = {r.get("stand_in", "") for r in records}
    return " / ".join(sorted(label for label in labels if label))


def write_jsonl(path: Path, rows: Iterable[dict[str, Any]]) -> int:
    """One JSON object per line (UTF-8, non-ASCII kept), streamed; returns the lines written."""
    n = 0
    with open(path, "w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
            n += 1
    return n
