"""The records ``nugget eval`` scores: the pipeline's built data for the config (the split the
evaluation stage reads, from the stage that builds it) or a JSONL file of the user's in the
same layout (``--data``; for the similarity tasks pi / rr a folder as build_pi / build_rr write
it or the authors' released nugget-data folder). A missing stage output or a bad file is a
one-line `CommandError`."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pipelines.cli import EXIT_CONFIG
from pipelines.command import CommandError, stage_output
from stages.config import PipelineConfig


@dataclass(frozen=True)
class TaskData:
    """Where a task's records come from and the fields each record needs."""

    stage: str  # the stage whose output holds them
    fields: tuple[str, ...]  # the keys a ``--data`` record must have

    def split(self, cfg: PipelineConfig, task: str) -> str:
        """The split the task's evaluation stage reads under ``cfg``."""
        if task == "qa":
            return cfg.eval.qa.split
        if task == "summarization":
            return cfg.eval.summarization.split
        if task == "restoration":
            return "dev"  # eval_re_restoration restores build_re_data's dev texts
        return cfg.eval.nugget_split


DATA: dict[str, TaskData] = {
    "qa": TaskData("build_lm", ("id", "document", "instruction", "answer")),
    "summarization": TaskData("build_lm", ("id", "document", "instruction", "answer")),
    # an AE model reconstructs the source; an MT model writes the target (its translation)
    "reconstruction": TaskData("build_mt_docs", ("source", "target")),
    # the texts of the checkpoint's sentence count, each restored from its one vector
    "restoration": TaskData("build_re_data", ("text",)),
    # ranking tasks: a query, its candidates and the answer's index (build_pi / build_rr's tasks.jsonl)
    "pi": TaskData("build_pi", ()),
    "rr": TaskData("build_rr", ()),
    # token-id segments per corpus of eval.lm.corpora (lm_<corpus>.parquet); no --data
    "lm": TaskData("build_lm", ()),
}
SIMILARITY = ("pi", "rr")


@dataclass(frozen=True)
class Data:
    """The records to score, where they come from and (pi / rr) the documents they name."""

    records: list[dict[str, Any]]
    where: str
    docs: dict[str, str] = field(default_factory=dict)
    segment_files: dict[str, Path] = field(default_factory=dict)  # lm: per corpus its segments file


def lm_data(cfg: PipelineConfig, limit: int | None) -> Data:
    """``lm``: per corpus of ``eval.lm.corpora`` the first ``limit`` (else ``eval.lm.max_segments``,
    0 = all, and for the Pile ``eval.lm.pile_tokens``' cap, as eval_lm) segments of ``eval.lm.split``
    in build_lm's segments files, each with its document (the unit its perplexity's interval resamples)."""
    from stages.nugget2d.artifacts import LMRecords
    from stages.nugget2d.lm.segments import first_scored, read_documents

    section = cfg.eval.lm
    built = LMRecords.read(stage_output(cfg, "build_lm"))
    files = {c: built.segments(c) for c in section.corpora}
    records = []
    for corpus, path in files.items():
        try:
            segments, documents = read_documents(path, section.split, limit or section.max_segments)
        except ValueError as exc:
            raise CommandError(EXIT_CONFIG, f"{path}: {exc}") from None
        if corpus == "pile" and not limit:
            segments = first_scored(segments, section.pile_tokens)
            documents = documents[: len(segments)]  # first_scored keeps a prefix
        records += [{"id": f"{corpus}-{i}", "corpus": corpus, "segment": s, "document": d}
                    for i, (s, d) in enumerate(zip(segments, documents, strict=True))]
    return Data(records, f"{built.path} (corpora {', '.join(files)}, split {section.split!r})",
                segment_files=files)


def similarity_data(folder: Path, where: str) -> Data:
    """The ranking tasks of a build_pi / build_rr output or a nugget-data ``folder``."""
    from stages.nugget.similarity import read_similarity_data

    try:
        tasks, docs = read_similarity_data(folder)
    except (OSError, ValueError, KeyError) as exc:
        raise CommandError(EXIT_CONFIG, f"{where}: {exc}") from None
    if not tasks:
        raise CommandError(EXIT_CONFIG, f"{where}: no tasks")
    return Data([{"id": f"task-{i}", "task": t} for i, t in enumerate(tasks)], where, docs)


def read_file(path: str, fields: tuple[str, ...]) -> list[dict]:
    """The records of the JSONL file ``path``, each with ``fields`` (an ``id`` is added where a
    record has none: its line number); exit 2 naming the line of the first bad one."""
    file = Path(path).expanduser()
    if not file.is_file():
        raise CommandError(EXIT_CONFIG, f"--data {path}: no such file")
    records: list[dict] = []
    for number, line in enumerate(file.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise CommandError(EXIT_CONFIG, f"--data {path}: line {number} is not JSON ({exc.msg})") from None
        if not isinstance(record, dict):
            raise CommandError(EXIT_CONFIG, f"--data {path}: line {number} is not a JSON object")
        missing = [f for f in fields if f not in record and f != "id"]
        if missing:
            raise CommandError(EXIT_CONFIG, f"--data {path}: line {number} has no {', '.join(missing)} "
                               f"(each record needs {', '.join(fields)})")
        records.append({"id": str(record.get("id", f"line-{number}")), **record})
    if not records:
        raise CommandError(EXIT_CONFIG, f"--data {path}: no records")
    return records


def pipeline_records(cfg: PipelineConfig, task: str, sentences: int = 1) -> tuple[list[dict], str]:
    """All records of ``task``'s evaluation split for ``cfg`` (restoration: the texts of
    ``sentences`` sentences) and a description of where they are; exit 3 naming the stage to
    run when its output is missing."""
    data = DATA[task]
    split = data.split(cfg, task)
    folder = stage_output(cfg, data.stage)
    if data.stage == "build_re_data":
        from stages.restorable.artifacts import RestorationTexts

        texts = RestorationTexts.read(folder)
        try:
            path = texts.split_file(sentences, split)
        except ValueError as exc:
            raise CommandError(EXIT_CONFIG, str(exc)) from None
        return [{"id": ex.get("id", f"{split}-{i}"), "text": ex["text"]}
                for i, ex in enumerate(texts.examples(sentences, split))], f"{path}"
    if data.stage == "build_lm":
        from stages.common.records import read_records
        from stages.nugget2d.artifacts import LMRecords

        path = LMRecords.read(folder).records(task)
        try:
            return read_records(path, split, 0), f"{path} split {split!r}"
        except ValueError as exc:
            raise CommandError(EXIT_CONFIG, str(exc)) from None
    import pyarrow.parquet as pq

    from stages.nugget.artifacts.data import MtDocuments

    path = MtDocuments.read(folder).split(split)
    table = pq.read_table(path, columns=["source", "target"]).to_pydict()
    records = [{"id": f"{split}-{i}", "source": s, "target": t}
               for i, (s, t) in enumerate(zip(table["source"], table["target"], strict=True))]
    if not records:
        raise CommandError(EXIT_CONFIG, f"{path}: split {split!r} is empty")
    return records, f"{path}"


def records_for(cfg: PipelineConfig, task: str, data_file: str | None, limit: int | None,
                sentences: int = 1) -> Data:
    """The records to score (``--data`` else the pipeline's), the first ``limit`` of them."""
    if task == "lm":
        if data_file is not None:
            raise CommandError(EXIT_CONFIG, "--data: --task lm reads build_lm's token-id segments only")
        return lm_data(cfg, limit)
    if task in SIMILARITY:
        # as eval_similarity: the released data folder of eval.<task>_data_dir wins over the built one
        folder = data_file or getattr(cfg.eval, f"{task}_data_dir") or None
        data = similarity_data(Path(folder).expanduser(), f"--data {folder}") if folder else \
            similarity_data(stage_output(cfg, DATA[task].stage), DATA[task].stage)
    elif data_file is not None:
        data = Data(read_file(data_file, DATA[task].fields), data_file)
    else:
        data = Data(*pipeline_records(cfg, task, sentences))
    return Data(data.records[:limit] if limit else data.records, data.where, data.docs)
