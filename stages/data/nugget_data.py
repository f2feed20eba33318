"""Task and document files of the similarity datasets, ours and the authors' format.

The authors' release (github.com/hiaoxui/nugget-data) has, per split, ``docs.txt``
(``id<TAB>text`` per line; query docs ``L<i>``, candidate docs ``R<j>``) and
``task.jsonl`` (``{"source": id, "candidates": [ids], "answer": index}``). Our builders
write ``docs.tsv`` (same line format) and ``tasks.jsonl`` with ``query`` in place of
``source``, plus a ``nugget-data/`` folder in the authors' exact layout, so readers of
either can consume both. :func:`read_tasks` accepts both spellings.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from stages.sources.text_files import read_utf8


@dataclass(frozen=True)
class Task:
    query: str
    candidates: tuple[str, ...]
    answer: int

    def __post_init__(self) -> None:
        if not 0 <= self.answer < len(self.candidates):
            raise ValueError(f"task {self.query}: answer {self.answer} outside {len(self.candidates)} candidates")
        if len(set(self.candidates)) != len(self.candidates):
            raise ValueError(f"task {self.query}: repeated candidates {self.candidates}")

    @property
    def positive(self) -> str:
        return self.candidates[self.answer]


def _one_line(doc_id: str, text: str) -> str:
    text = " ".join(text.split())  # tabs/newlines inside a doc would break the format
    if "\t" in doc_id or not doc_id or not text:
        raise ValueError(f"document {doc_id!r}: an id without tabs and a non-empty text are required")
    return f"{doc_id}\t{text}\n"


def write_docs(path: Path, docs: Iterable[tuple[str, str]]) -> int:
    lines = [_one_line(i, t) for i, t in docs]
    path.write_text("".join(lines), encoding="utf-8")
    return len(lines)


def read_docs(path: Path) -> dict[str, str]:
    docs: dict[str, str] = {}
    for n, line in enumerate(read_utf8(path).splitlines(), 1):
        doc_id, sep, text = line.partition("\t")
        if not sep or not doc_id:
            raise ValueError(f"{path}:{n}: expected 'id<TAB>text'")
        if doc_id in docs:
            raise ValueError(f"{path}:{n}: duplicate document id {doc_id!r}")
        docs[doc_id] = text
    return docs


def write_tasks(path: Path, tasks: Iterable[Task], query_key: str = "query") -> int:
    lines = [
        json.dumps({query_key: t.query, "candidates": list(t.candidates), "answer": t.answer})
        for t in tasks
    ]
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return len(lines)


def read_tasks(path: Path) -> list[Task]:
    """Tasks of ``tasks.jsonl`` (ours) or ``task.jsonl`` (the authors')."""
    tasks = []
    for n, line in enumerate(read_utf8(path).splitlines(), 1):
        row = json.loads(line)
        query = row.get("query", row.get("source"))
        if query is None or "candidates" not in row or "answer" not in row:
            raise ValueError(f"{path}:{n}: a task needs query/source, candidates and answer")
        tasks.append(Task(query, tuple(row["candidates"]), int(row["answer"])))
    return tasks


def write_dataset(out_dir: Path, docs: list[tuple[str, str]], tasks: list[Task]) -> None:
    """``docs.tsv`` + ``tasks.jsonl`` and the authors' ``nugget-data/{docs.txt,task.jsonl}``."""
    known = {i for i, _ in docs}
    missing = {c for t in tasks for c in (t.query, *t.candidates)} - known
    if missing:
        raise ValueError(f"tasks refer to {len(missing)} documents not written, e.g. {sorted(missing)[:3]}")
    write_docs(out_dir / "docs.tsv", docs)
    write_tasks(out_dir / "tasks.jsonl", tasks)
    (out_dir / "nugget-data").mkdir(exist_ok=True)
    write_docs(out_dir / "nugget-data" / "docs.txt", docs)
    write_tasks(out_dir / "nugget-data" / "task.jsonl", tasks, query_key="source")
