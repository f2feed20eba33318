"""Task records of ``build_lm`` (``qa.jsonl``, ``summarization.jsonl``) for the evaluations."""

from __future__ import annotations

import json
from pathlib import Path


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
