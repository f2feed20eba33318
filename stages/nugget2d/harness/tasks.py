"""The local lm-evaluation-harness tasks of ``eval_harness``: one per request type the harness
has, built from ``build_lm``'s own records (real offline text) and written as task YAMLs over
local JSON-lines files, so the harness runs them with no network (``dataset_path: json``).

- ``nugget_qa`` (``generate_until``): the QA records' document and question -> the answer;
  ``exact_match`` after lower-casing and dropping punctuation (the harness's own metric).
- ``nugget_qa_choice`` (``multiple_choice``, scored by ``loglikelihood``): the same QA records,
  the answer among the answers of other records (`answer_choice_docs`); the answer is in the
  document, so a system that loses the document loses accuracy; ``acc`` and ``acc_norm``;
- ``nugget_cloze`` (``multiple_choice``): a document's first
  sentences, then its true next sentence among ``choices - 1`` sentences of other documents;
  ``acc`` and ``acc_norm`` (log-likelihood per byte).
- ``nugget_lm_wiki`` / ``nugget_lm_pile`` (``loglikelihood_rolling``): the text of build_lm's
  LM segments (distant + recent tokens, decoded); ``word_perplexity``, ``byte_perplexity``,
  ``bits_per_byte``.

Each stands in for a benchmark (`LocalTask.stand_in`): SQuAD-style QA, a HellaSwag-style
next-sentence cloze, WikiText / Pile perplexity. Nothing here imports lm_eval: the YAML is plain
data, so this module is tested and imported without the harness extra.
"""

from __future__ import annotations

import json
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from stages.common.records import write_jsonl
from stages.corpora.text import split_sentences

SPLIT = "test"  # the one split of every local task's data file (the harness's test_split)
QA_PROMPT = "{{document}}\n\nQuestion: {{question}}\nAnswer:"


@dataclass(frozen=True)
class LocalTask:
    """A task's name, the harness request type it makes, what it stands in for, its documents
    (one dict each, the fields its YAML's templates read) and the YAML's task-specific keys."""

    name: str
    output_type: str
    stand_in: str
    docs: list[dict[str, Any]]
    spec: dict[str, Any]

    def yaml(self, data_file: str) -> dict[str, Any]:
        """The task YAML reading ``data_file`` (a path as the harness will open it)."""
        return {"task": self.name, "dataset_path": "json", "dataset_kwargs": {"data_files": {SPLIT: data_file}},
                "test_split": SPLIT, "output_type": self.output_type, **self.spec,
                "metadata": {"version": 1.0, "stand_in": self.stand_in}}


def qa_task(records: Sequence[Mapping[str, Any]], stand_in: str) -> LocalTask:
    """``nugget_qa`` from build_lm's QA records (``document``, ``instruction``: the question as
    the pipeline's prompt words it, ``answer``, ``answers``)."""
    docs = [{"id": str(r["id"]), "document": r["document"], "question": r["instruction"], "answer": r["answer"],
             "answers": list(r.get("answers") or [r["answer"]])} for r in records]
    spec = {"doc_to_text": QA_PROMPT, "doc_to_target": "{{answer}}", "target_delimiter": " ",
            "generation_kwargs": {"until": ["\n"], "do_sample": False},
            "metric_list": [{"metric": "exact_match", "aggregation": "mean", "higher_is_better": True,
                             "ignore_case": True, "ignore_punctuation": True}]}
    return LocalTask("nugget_qa", "generate_until", f"SQuAD-style QA: {stand_in}", docs, spec)


def answer_choice_docs(items: Sequence[tuple[str, str, str, str]], choices: int, seed: int,
                       limit: int = 0) -> list[dict[str, Any]]:
    """Multiple-choice QA documents from ``(id, document, question, answer)`` items: each answer
    among the answers of the next ``choices - 1`` items that have another one (in item order,
    wrapping round over every item), in an order drawn by one ``random.Random(seed)`` along the
    items; the first ``limit`` documents (0: all), which are the first of the unlimited list."""
    distinct = {answer for *_, answer in items}
    if len(distinct) < choices:
        raise ValueError(f"multiple-choice QA: {len(distinct)} distinct answers, fewer than choices={choices}")
    rng = random.Random(seed)
    docs = []
    for i, (doc_id, document, question, answer) in enumerate(items[:limit] if limit else items):
        others: list[str] = []
        for step in range(1, len(items)):
            other = items[(i + step) % len(items)][3]
            if other != answer and other not in others:
                others.append(other)
            if len(others) == choices - 1:
                break
        options = [answer, *others]
        rng.shuffle(options)
        docs.append({"id": doc_id, "document": document, "question": question, "choices": options,
                     "label": options.index(answer)})
    return docs


def qa_choice_task(records: Sequence[Mapping[str, Any]], stand_in: str, choices: int, seed: int,
                   limit: int = 0) -> LocalTask:
    """``nugget_qa_choice`` from build_lm's QA records (as `qa_task`), `answer_choice_docs`: the
    first ``limit`` records (0: all), their wrong choices from every record."""
    items = [(str(r["id"]), r["document"], r["instruction"], r["answer"].strip()) for r in records]
    spec = {"doc_to_text": QA_PROMPT, "doc_to_choice": "{{choices}}", "doc_to_target": "{{label}}",
            "target_delimiter": " ",
            "metric_list": [{"metric": m, "aggregation": "mean", "higher_is_better": True} for m in ("acc", "acc_norm")]}
    return LocalTask("nugget_qa_choice", "multiple_choice", f"SQuAD-style QA as multiple choice (the answer among "
                     f"other questions' answers): {stand_in}", answer_choice_docs(items, choices, seed, limit), spec)


def cloze_task(documents: Sequence[tuple[str, str]], choices: int, seed: int, limit: int = 0) -> LocalTask:
    """``nugget_cloze`` from ``(id, text)`` documents: the first half of each document's sentences
    (at least one) is the context, the next sentence the answer, and ``choices - 1`` sentences
    drawn (seeded) from the other documents the distractors, placed with the answer in a seeded
    order; the first ``limit`` such items (0: all), their distractors drawn from every document.
    A document of one sentence has no next sentence and is skipped; fewer than ``choices``
    documents leave too few distractors (ValueError)."""
    split = [(i, s) for i, text in documents for s in [split_sentences(text)] if len(s) >= 2]
    if len(split) < choices:
        raise ValueError(f"nugget_cloze: {len(split)} documents of 2+ sentences, fewer than choices={choices} "
                         "(one true sentence, the rest from other documents)")
    rng = random.Random(seed)
    docs = []
    for k, (doc_id, sentences) in enumerate(split[:limit] if limit else split):
        cut = max(1, len(sentences) // 2)
        others = [s for j, (_, other) in enumerate(split) if j != k for s in other if s != sentences[cut]]
        options = [sentences[cut], *rng.sample(others, choices - 1)]
        rng.shuffle(options)
        docs.append({"id": doc_id, "context": " ".join(sentences[:cut]), "choices": options,
                     "label": options.index(sentences[cut])})
    spec = {"doc_to_text": "{{context}}", "doc_to_choice": "{{choices}}", "doc_to_target": "{{label}}",
            "target_delimiter": " ",
            "metric_list": [{"metric": m, "aggregation": "mean", "higher_is_better": True} for m in ("acc", "acc_norm")]}
    return LocalTask("nugget_cloze", "multiple_choice", "HellaSwag-style next-sentence cloze over real offline "
                     "documents (distractors: sentences of other documents)", docs, spec)


def rolling_task(corpus: str, texts: Sequence[tuple[str, str]], stand_in: str) -> LocalTask:
    """``nugget_lm_<corpus>`` from ``(id, text)`` pairs: each text scored whole, token by token."""
    docs = [{"id": i, "text": t} for i, t in texts]
    spec = {"doc_to_text": "", "doc_to_target": "{{text}}",
            "metric_list": [{"metric": m, "aggregation": agg, "higher_is_better": False} for m, agg in (
                ("word_perplexity", "weighted_perplexity"), ("byte_perplexity", "weighted_perplexity"),
                ("bits_per_byte", "bits_per_byte"))]}
    return LocalTask(f"nugget_lm_{corpus}", "loglikelihood_rolling", f"{corpus} perplexity: {stand_in}", docs, spec)


def write_tasks(folder: Path, tasks: Sequence[LocalTask]) -> dict[str, Path]:
    """Each task's documents as ``<folder>/<name>.jsonl`` and its YAML as ``<folder>/<name>.yaml``,
    naming its data file by file name alone: the harness opens it relative to its working
    directory, so the folder runs from wherever it is copied (``cd`` into it, ``--include_path .``).
    Returns name -> YAML."""
    folder.mkdir(parents=True, exist_ok=True)
    for task in tasks:
        write_jsonl(folder / f"{task.name}.jsonl", task.docs)
    return write_yamls(folder, tasks, None)


def write_yamls(folder: Path, tasks: Sequence[LocalTask], data_dir: Path | None) -> dict[str, Path]:
    """The tasks' YAMLs in ``folder``, each naming its data file ``<data_dir>/<name>.jsonl``
    (absolute; None: the bare file name); returns name -> YAML. The stage runs the harness on a
    copy naming its output folder's files, wherever its working directory is."""
    folder.mkdir(parents=True, exist_ok=True)
    written = {}
    for task in tasks:
        data = str(data_dir.resolve() / f"{task.name}.jsonl") if data_dir is not None else f"{task.name}.jsonl"
        path = folder / f"{task.name}.yaml"
        path.write_text(yaml.safe_dump(task.yaml(data), sort_keys=False, allow_unicode=True))
        written[task.name] = path
    return written


def read_docs(path: Path) -> list[dict[str, Any]]:
    """A task's documents as `write_tasks` wrote them."""
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
