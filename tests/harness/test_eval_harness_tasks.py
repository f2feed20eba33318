"""eval_harness's local tasks (`stages.nugget2d.harness.tasks`): the documented fields of each
data file, the cloze's construction, and each YAML as lm-evaluation-harness loads it."""

from __future__ import annotations

import pytest
import yaml

from stages.nugget2d.harness.tasks import (
    answer_choice_docs,
    cloze_task,
    qa_choice_task,
    qa_task,
    read_docs,
    rolling_task,
    write_tasks,
    write_yamls,
)

RECORDS = [{"id": f"qa-{i}", "document": f"Doc {i} is about rivers. It flows north.", "answer": "rivers",
            "instruction": f"Fill in the blank: Doc {i} is about _____", "answers": ["rivers", "the rivers"]}
           for i in range(3)]
ANSWERS = ["rivers", "mountains", "lakes", "rivers"]  # two records share an answer
CHOICE_RECORDS = [{"id": f"qc-{i}", "document": f"Doc {i} is about {a}.", "answer": a,
                   "instruction": f"Doc {i} is about _____"} for i, a in enumerate(ANSWERS)]
DOCUMENTS = [(f"d{i}", f"First sentence of {i}. Second sentence of {i}. Third sentence of {i}. Fourth of {i}.")
             for i in range(5)]


def _tasks():
    return [qa_task(RECORDS, "cloze stand-in"), qa_choice_task(CHOICE_RECORDS, "cloze stand-in", 3, seed=0),
            cloze_task(DOCUMENTS, choices=3, seed=0),
            rolling_task("wiki", [("wiki-0", "A text to score."), ("wiki-1", "Another one.")], "offline Wikipedia")]


def test_data_files_hold_the_documented_fields(tmp_path):
    written = write_tasks(tmp_path, _tasks())
    assert set(written) == {"nugget_qa", "nugget_qa_choice", "nugget_cloze", "nugget_lm_wiki"}
    qa = read_docs(tmp_path / "nugget_qa.jsonl")
    assert [set(d) for d in qa] == [{"id", "document", "question", "answer", "answers"}] * 3
    assert qa[0]["question"] == RECORDS[0]["instruction"] and qa[0]["answers"] == ["rivers", "the rivers"]
    choice = read_docs(tmp_path / "nugget_qa_choice.jsonl")
    assert [set(d) for d in choice] == [{"id", "document", "question", "choices", "label"}] * 4
    for doc, answer in zip(choice, ANSWERS, strict=True):
        # the answer among the next records' other answers, each once (rivers twice in the records)
        assert doc["choices"][doc["label"]] == answer and sorted(doc["choices"]) == ["lakes", "mountains", "rivers"]
    cloze = read_docs(tmp_path / "nugget_cloze.jsonl")
    assert len(cloze) == 5 and all(set(d) == {"id", "context", "choices", "label"} for d in cloze)
    for doc, (_, text) in zip(cloze, DOCUMENTS, strict=True):
        # the first half of the sentences, then the true next sentence among 3 (2 from other documents)
        i = doc["id"][1:]
        assert doc["context"] == f"First sentence of {i}. Second sentence of {i}." and text.startswith(doc["context"])
        assert len(doc["choices"]) == 3 and doc["choices"][doc["label"]] == f"Third sentence of {i}."
        others = [c for i, c in enumerate(doc["choices"]) if i != doc["label"]]
        assert all(f"of {i}." not in c for c in others)
    assert read_docs(tmp_path / "nugget_lm_wiki.jsonl")[1] == {"id": "wiki-1", "text": "Another one."}
    # the published YAML names its data file by name alone: it runs from its folder
    spec = yaml.safe_load(written["nugget_qa"].read_text())
    assert spec["dataset_kwargs"]["data_files"] == {"test": "nugget_qa.jsonl"}
    assert spec["output_type"] == "generate_until" and spec["metadata"]["stand_in"].endswith("cloze stand-in")


def test_cloze_is_seeded_and_needs_enough_documents():
    assert cloze_task(DOCUMENTS, 3, seed=1).docs == cloze_task(DOCUMENTS, 3, seed=1).docs
    assert cloze_task(DOCUMENTS, 3, seed=1).docs != cloze_task(DOCUMENTS, 3, seed=2).docs
    with pytest.raises(ValueError, match="nugget_cloze: 2 documents of 2\\+ sentences, fewer than choices=3"):
        cloze_task([*DOCUMENTS[:2], ("one", "A single sentence.")], 3, seed=0)
    items = [(r["id"], r["document"], r["instruction"], r["answer"]) for r in CHOICE_RECORDS]
    assert answer_choice_docs(items, 3, seed=1) == answer_choice_docs(items, 3, seed=1)
    # a limit keeps the first documents as they are unlimited: their wrong answers from every item
    assert len(answer_choice_docs(items, 3, seed=1, limit=1)) == 1  # one document, 3 answers to choose from
    assert answer_choice_docs(items, 3, seed=1, limit=2) == answer_choice_docs(items, 3, seed=1)[:2]
    with pytest.raises(ValueError, match="multiple-choice QA: 3 distinct answers, fewer than choices=4"):
        answer_choice_docs(items, 4, seed=0)


def test_each_yaml_loads_in_the_harness_and_builds_its_requests(tmp_path):
    pytest.importorskip("lm_eval")
    from lm_eval.tasks import TaskManager, get_task_dict

    tasks = _tasks()
    write_tasks(tmp_path / "tasks", tasks)
    write_yamls(tmp_path / "run", tasks, tmp_path / "tasks")
    manager = TaskManager(include_path=str(tmp_path / "run"), include_defaults=False)
    loaded = get_task_dict([t.name for t in tasks], manager)
    kinds = {name: task.OUTPUT_TYPE for name, task in loaded.items()}
    assert kinds == {"nugget_qa": "generate_until", "nugget_qa_choice": "multiple_choice", "nugget_cloze": "multiple_choice",
                     "nugget_lm_wiki": "loglikelihood_rolling"}
    qa = loaded["nugget_qa"]
    doc = next(iter(qa.test_docs()))
    assert qa.doc_to_text(doc) == f"{RECORDS[0]['document']}\n\nQuestion: {RECORDS[0]['instruction']}\nAnswer:"
    assert qa.doc_to_target(doc) == "rivers"
    choice = loaded["nugget_qa_choice"]
    first = next(iter(choice.test_docs()))
    assert choice.doc_to_text(first).startswith("Doc 0 is about rivers.\n\nQuestion: Doc 0 is about _____")
    assert choice.doc_to_choice(first)[choice.doc_to_target(first)] == "rivers"
    cloze = loaded["nugget_cloze"]
    first = next(iter(cloze.test_docs()))
    assert cloze.doc_to_choice(first) == first["choices"] and cloze.doc_to_target(first) == first["label"]
    assert sum(1 for _ in loaded["nugget_lm_wiki"].test_docs()) == 2


def test_request_types_of_local_tasks_and_an_unknown_name(tmp_path):
    pytest.importorskip("lm_eval")
    from stages.nugget2d.harness.run import request_types, task_manager

    tasks = _tasks()
    write_tasks(tmp_path / "tasks", tasks)
    write_yamls(tmp_path / "run", tasks, tmp_path / "tasks")
    manager = task_manager(tmp_path / "run", [t.name for t in tasks], [t.name for t in tasks])  # local only: fast
    assert request_types([t.name for t in tasks], manager) == {
        "nugget_qa": {"generate_until"}, "nugget_qa_choice": {"multiple_choice"}, "nugget_cloze": {"multiple_choice"},
        "nugget_lm_wiki": {"loglikelihood_rolling"}}
    with pytest.raises(ValueError, match=r"eval.harness.tasks: \['no_such_task'\] are neither local tasks"):
        request_types(["nugget_qa", "no_such_task"], manager)
