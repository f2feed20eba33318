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
    """``id -> text`` of a ``docs.tsv`` / ``docs.txt``; blank lines are skipped, any other
    line that is not ``id<TAB>text`` is named by ``file:line``."""
    docs: dict[str, str] = {}
    for n, line in enumerate(read_utf8(path).splitlines(), 1):
        if not line.strip():
            continue
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


def _task(row: object, where: str) -> Task:
    """One parsed ``task.jsonl`` row as a `Task`; a `ValueError` starting with ``where``
    (``file:line``) for a field of the wrong type (``candidates: "R0"`` is not a list)."""
    if not isinstance(row, dict):
        raise ValueError(f"{where}: expected a JSON object, got {type(row).__name__}")
    query = row.get("query", row.get("source"))
    if query is None or "candidates" not in row or "answer" not in row:
        raise ValueError(f"{where}: a task needs query/source, candidates and answer")
    candidates, answer = row["candidates"], row["answer"]
    if not isinstance(query, str) or not query:
        raise ValueError(f"{where}: query/source: expected a document id (a string), got {query!r}")
    if not isinstance(candidates, list) or not all(isinstance(c, str) and c for c in candidates):
        raise ValueError(f"{where}: candidates: expected a list of document ids (strings), got {candidates!r}")
    if isinstance(answer, bool) or not isinstance(answer, int):
        raise ValueError(f"{where}: answer: expected the index of the positive candidate (an int), got {answer!r}")
    try:
        return Task(query, tuple(candidates), answer)
    except ValueError as exc:
        raise ValueError(f"{where}: {exc}") from exc


# the documents file of each tasks file (the pair a folder of either layout holds)
DOCS_OF_TASKS = {"tasks.jsonl": "docs.tsv", "task.jsonl": "docs.txt"}


def read_tasks(path: Path, docs: dict[str, str] | None = None, docs_path: Path | None = None) -> list[Task]:
    """Tasks of ``tasks.jsonl`` (ours) or ``task.jsonl`` (the authors'). Blank lines are
    skipped; a line that is not a task is named by ``file:line``. Each task's document ids
    are checked against ``docs`` (read from ``docs_path``), by default the documents file
    beside it (`DOCS_OF_TASKS`) when there is one: an unknown id is named here, at load,
    not as a KeyError in the middle of an evaluation."""
    path = Path(path)
    if docs is None:
        sibling = path.parent / DOCS_OF_TASKS.get(path.name, "")
        if path.name in DOCS_OF_TASKS and sibling.is_file():
            docs, docs_path = read_docs(sibling), sibling
    tasks = []
    for n, line in enumerate(read_utf8(path).splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path}:{n}: not a JSON object ({exc.msg} at column {exc.colno})") from exc
        task = _task(row, f"{path}:{n}")
        if docs is not None:
            unknown = [i for i in (task.query, *task.candidates) if i not in docs]
            if unknown:
                raise ValueError(f"{path}:{n}: document id(s) {unknown[:5]} are not in "
                                 f"{docs_path or 'the documents'}")
        tasks.append(task)
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
