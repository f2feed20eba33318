"""The sentence-classification tasks of RE table 10 (appendix E) as labelled splits: readers of
their published layouts, of their hub datasets, and the offline stand-in.

Every reader returns a `Task`: its splits as ``(text, label)`` pairs (labels as names), the
label set, and whether a dev split picks the probe's regularisation (``dev``) or
cross-validation on train does (``cv``: TREC, which publishes no dev split; SentEval's
protocol). Layouts:

- GLUE SST-2 (`read_sst2`): ``train.tsv`` / ``dev.tsv``, header ``sentence<TAB>label`` (0 / 1).
  GLUE's test labels are unpublished, so its dev split is our test split, and a seeded
  ``dev_fraction`` of train is held out as dev.
- SST fine-grained (`read_sst5`): SetFit/sst5's ``{train,dev,test}.jsonl`` (``text``,
  ``label`` 0-4, ``label_text``), or the original Stanford Sentiment Treebank PTB trees
  (``trees/{train,dev,test}.txt``, one tree per line: the root's label is the sentence's, the
  leaves its tokens).
- TREC (`read_trec`): Li & Roth's ``train_5500.label`` (train) and ``TREC_10.label`` (test),
  ``COARSE:fine question`` per line, latin-1 encoded (as SentEval reads them); coarse 6
  labels, fine 50.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

Example = tuple[str, str]  # (text, label)
SST2_LABELS = ("negative", "positive")
SST5_LABELS = ("very negative", "negative", "neutral", "positive", "very positive")
TREC_FILES = {"train": "train_5500.label", "test": "TREC_10.label"}
_LEAF = re.compile(r"\(\d+ ([^()]+)\)")  # a PTB leaf "(2 word)"
_ROOT = re.compile(r"^\((\d+) ")


@dataclass(frozen=True)
class Task:
    """One task's splits (``train``, ``test`` and, with ``selection == "dev"``, ``dev``)."""

    splits: dict[str, list[Example]]
    labels: list[str]
    selection: str  # "dev": the dev split picks the probe's L2; "cv": cross-validation on train
    origin: str  # where the rows came from, as the report states it


def held_out(key: str, seed: int, fraction: float) -> bool:
    """Whether the row ``key`` is held out: a seeded hash, so the split does not depend on order."""
    digest = hashlib.sha256(f"{seed}:{key}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 < fraction


def _need(path: Path) -> Path:
    if not path.is_file():
        raise FileNotFoundError(f"{path}: missing (the published layout of this task needs it)")
    return path


def _tsv_rows(path: Path) -> list[dict[str, str]]:
    """GLUE's TSV (no quoting: a sentence may hold quotes) as dicts by its header."""
    lines = _need(path).read_text(encoding="utf-8").splitlines()
    if not lines:
        raise ValueError(f"{path}: empty (expected a 'sentence<TAB>label' header)")
    header = lines[0].split("\t")
    rows = []
    for n, line in enumerate(lines[1:], 2):
        parts = line.split("\t")
        if len(parts) != len(header):
            raise ValueError(f"{path}:{n}: {len(parts)} fields, the header names {len(header)}")
        rows.append(dict(zip(header, parts, strict=True)))
    return rows


def _labelled(rows: Iterable[dict[str, Any]], text: str, label: str, names: tuple[str, ...], where: str
              ) -> list[Example]:
    out = []
    for n, row in enumerate(rows, 1):
        value = str(row.get(label, ""))
        if not value.isdigit() or int(value) >= len(names):
            raise ValueError(f"{where}: row {n} has {label} {row.get(label)!r}, not one of 0..{len(names) - 1}")
        out.append((str(row[text]).strip(), names[int(value)]))
    return out


def sst2_task(train: list[Example], test: list[Example], dev_fraction: float, seed: int, origin: str) -> Task:
    """GLUE SST-2 with its dev split as test and a seeded share of train as dev."""
    keep = [ex for i, ex in enumerate(train) if not held_out(f"sst2:{i}", seed, dev_fraction)]
    dev = [ex for i, ex in enumerate(train) if held_out(f"sst2:{i}", seed, dev_fraction)]
    return Task({"train": keep, "dev": dev, "test": test}, list(SST2_LABELS), "dev", origin)


def read_sst2(folder: Path, dev_fraction: float, seed: int) -> Task:
    train, dev = (_labelled(_tsv_rows(folder / f"{s}.tsv"), "sentence", "label", SST2_LABELS, str(folder / f"{s}.tsv"))
                  for s in ("train", "dev"))
    return sst2_task(train, dev, dev_fraction, seed, f"GLUE SST-2 ({folder}: train.tsv, dev.tsv as test)")


def tree_example(line: str, where: str) -> Example:
    """A PTB tree of the SST: (its words, its root's label name)."""
    root, leaves = _ROOT.match(line.strip()), _LEAF.findall(line)
    if root is None or not leaves or int(root.group(1)) >= len(SST5_LABELS):
        raise ValueError(f"{where}: not an SST tree with a root label 0-4: {line[:60]!r}")
    return " ".join(leaves), SST5_LABELS[int(root.group(1))]


def read_sst5(folder: Path) -> Task:
    """SetFit/sst5's jsonl files, or the PTB trees (``trees/`` or the folder itself)."""
    if (folder / "train.jsonl").is_file():
        splits = {}
        for split in ("train", "dev", "test"):
            path = _need(folder / f"{split}.jsonl")
            rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
            splits[split] = _labelled(rows, "text", "label", SST5_LABELS, str(path))
        return Task(splits, list(SST5_LABELS), "dev", f"SST fine-grained, SetFit/sst5 layout ({folder})")
    trees = folder / "trees" if (folder / "trees").is_dir() else folder
    if not (trees / "train.txt").is_file():
        raise FileNotFoundError(f"data.re_downstream.sst5_dir={folder}: neither train.jsonl (SetFit/sst5) nor "
                                "trees/train.txt (the PTB trees)")
    splits = {split: [tree_example(line, f"{trees / f'{split}.txt'}:{n}") for n, line in
                      enumerate(_need(trees / f"{split}.txt").read_text(encoding="utf-8").splitlines(), 1)
                      if line.strip()] for split in ("train", "dev", "test")}
    return Task(splits, list(SST5_LABELS), "dev", f"SST fine-grained, PTB trees ({trees})")


def trec_rows(path: Path) -> list[tuple[str, str, str]]:
    """(question, coarse, fine) per line of a TREC ``.label`` file; fine is ``COARSE:fine``."""
    out = []
    for n, line in enumerate(_need(path).read_bytes().decode("latin-1").splitlines(), 1):
        if not line.strip():
            continue
        label, _, question = line.strip().partition(" ")
        coarse, colon, fine = label.partition(":")
        if not colon or not coarse.isupper() or not fine or not question:
            raise ValueError(f"{path}:{n}: not 'COARSE:fine question': {line[:60]!r}")
        out.append((question.strip(), coarse, label))
    return out


def trec_tasks(rows: dict[str, list[tuple[str, str, str]]], origin: str) -> dict[str, Task]:
    """TREC's two tasks (coarse, fine) from its (question, coarse, fine) rows; labels: those train holds."""
    out = {}
    for task, column in (("trec_coarse", 1), ("trec_fine", 2)):
        splits = {s: [(r[0], r[column]) for r in split_rows] for s, split_rows in rows.items()}
        out[task] = Task(splits, sorted({label for _, label in splits["train"]}), "cv", origin)
    return out


def read_trec(folder: Path) -> dict[str, Task]:
    return trec_tasks({s: trec_rows(folder / f) for s, f in TREC_FILES.items()},
                      f"TREC, Li & Roth's files ({folder}: {', '.join(TREC_FILES.values())})")


def _names(rows: Any, column: str) -> list[str] | None:
    """A hub dataset column's ClassLabel names (None: not a ClassLabel)."""
    names = getattr(getattr(rows, "features", {}).get(column), "names", None)
    return None if names is None else list(names)


def hub_task(name: str, dev_fraction: float, seed: int) -> dict[str, Task]:
    """``name``'s task(s) loaded from the hub by `stages.config.data.HF_NAMES`."""
    from stages.corpora.paper_sources import load_rows

    if name == "sst2":
        train, test = (_labelled(load_rows("glue_sst2", s), "sentence", "label", SST2_LABELS, f"glue/sst2 {s}")
                       for s in ("train", "validation"))
        return {"sst2": sst2_task(train, test, dev_fraction, seed, "GLUE SST-2 (hub glue/sst2; validation as test)")}
    if name == "sst5":
        splits = {ours: _labelled(load_rows("sst5", theirs), "text", "label", SST5_LABELS, f"SetFit/sst5 {theirs}")
                  for ours, theirs in (("train", "train"), ("dev", "validation"), ("test", "test"))}
        return {"sst5": Task(splits, list(SST5_LABELS), "dev", "SST fine-grained (hub SetFit/sst5)")}
    rows = {}
    for split in ("train", "test"):
        data = load_rows("trec", split)
        coarse, fine = _names(data, "coarse_label"), _names(data, "fine_label")
        if coarse is None or fine is None:
            raise ValueError("CogComp/trec: coarse_label / fine_label are not ClassLabel columns")
        # fine names carry their coarse label ("LOC:city"), as in Li & Roth's files; prefixed where one does not
        full = [name if ":" in name else f"?:{name}" for name in fine]
        rows[split] = [(r["text"], coarse[r["coarse_label"]], full[r["fine_label"]].replace(
            "?", coarse[r["coarse_label"]], 1)) for r in data]
    return trec_tasks(rows, "TREC (hub CogComp/trec)")
