"""Paper-scale sources: HF datasets by name (or a local copy in their format), ParaBank.

For users with network or a local copy (profile=paper). Each ``*_from_rows`` function
maps rows with the columns of the HF dataset onto our records, so the same code reads
the hub dataset and local parquet/json files in that layout (tests use the latter):

- ``wmt19`` (config ``zh-en``): ``translation: {"en": ..., "zh": ...}``;
- ``wikitext`` (``wikitext-103-v1``, or ``-raw-v1``): ``text`` (one line per row; an
  article starts at its `` = Title = `` line, `stages.corpora.articles.from_wikitext103`);
- ``squad``: ``context``, ``question``, ``answers: {"text": [...], ...}``;
- ``cnn_dailymail`` (``3.0.0``): ``article``, ``highlights``;
- a Pile sample: ``text``;
- ``allenai/c4`` (config ``realnewslike``, RE §4.1): ``text`` (one news article per row;
  ``url`` and ``timestamp`` are not read), streamed by :func:`iter_texts`: its train split
  holds 13M articles.

ParaBank v1 is read from a local TSV: each line is an English reference sentence and its
paraphrases, optionally preceded by a numeric score column (the released files vary);
the first paraphrase is used. Lines keep the file's order (ParaBank keeps document
order, Nugget app. A.1).
"""

from __future__ import annotations

import glob
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from stages.config.data import HF_NAMES
from stages.sources.text_files import read_utf8


def load_rows(source: str, split: str, local_files: str = "", config: str | None = None):
    """Rows of a paper dataset: from ``local_files`` (a glob of parquet/json/jsonl files in
    the HF layout; ``{split}`` in it is replaced by ``split``) if given, else
    ``datasets.load_dataset`` by name (needs the hub)."""
    import datasets

    name, default_config = HF_NAMES[source]
    if local_files:
        local_files = local_files.replace("{split}", split)
        files = sorted(glob.glob(local_files))
        if not files:
            raise FileNotFoundError(f"{source}: no files match local_files={local_files!r}")
        fmt = "parquet" if files[0].endswith(".parquet") else "json"
        return datasets.load_dataset(fmt, data_files=files, split="train")
    return datasets.load_dataset(name, config or default_config, split=split)


def wmt_pairs_from_rows(rows: Iterable[dict[str, Any]], src: str = "en", tgt: str = "zh"):
    return [(r["translation"][src], r["translation"][tgt]) for r in rows]


def squad_from_rows(rows: Iterable[dict[str, Any]]) -> list[tuple[str, str, list[str]]]:
    """(context, question, every gold answer) triples; questions without one are skipped."""
    return [(r["context"], r["question"], list(r["answers"]["text"])) for r in rows if r["answers"]["text"]]


def cnn_from_rows(rows: Iterable[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(r["article"], r["highlights"]) for r in rows]


def texts_from_rows(rows: Iterable[dict[str, Any]]) -> list[str]:
    return [r["text"] for r in rows]


@runtime_checkable
class Columnar(Protocol):
    """Rows that say their columns up front and read a subset of them (a ``datasets.Dataset``;
    ``column_names`` is None where the columns are unknown until read)."""

    column_names: list[str] | None

    def select_columns(self, column_names: list[str]) -> Iterable[dict[str, Any]]: ...


def iter_texts(rows: Iterable[dict[str, Any]], source: str) -> Iterator[str]:
    """The ``text`` of each row as the rows stream in, for a split too large to hold as a
    list (C4's 13M articles); rows without a ``text`` column are an error naming ``source``."""
    if isinstance(rows, Columnar) and rows.column_names is not None:
        if "text" not in rows.column_names:
            raise ValueError(f"{source}: the rows have no 'text' column (columns {rows.column_names})")
        rows = rows.select_columns(["text"])  # url / timestamp are never decoded
    for n, row in enumerate(rows):
        if not isinstance(row.get("text"), str):
            raise ValueError(f"{source}: row {n} has no string 'text' (keys {sorted(row)})")
        yield row["text"]


def parabank_pairs(path: str | Path) -> list[tuple[str, str]]:
    """(reference, first paraphrase) per line of a ParaBank v1 TSV."""
    path = Path(path).expanduser()
    if not path.is_file():
        raise FileNotFoundError(f"ParaBank file data.pi.parabank_path={str(path)!r} does not exist")
    pairs = []
    for n, line in enumerate(read_utf8(path).splitlines(), 1):
        cols = [c.strip() for c in line.split("\t")]
        try:
            float(cols[0])
            cols = cols[1:]  # a leading score column
        except ValueError:
            pass
        if len(cols) < 2 or not cols[0] or not cols[1]:
            raise ValueError(f"{path}:{n}: expected a sentence and a paraphrase, got {line[:80]!r}")
        pairs.append((cols[0], cols[1]))
    return pairs
