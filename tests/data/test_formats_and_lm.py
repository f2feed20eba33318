"""nugget-data round trip, paper-source adapters on local files, Nugget2D builders."""

from __future__ import annotations

import json

import numpy as np
import pytest

from stages.corpora import paper_sources as paper
from stages.corpora.articles import from_wikitext103
from stages.corpora.nugget_data import Task, read_docs, read_tasks, write_dataset
from stages.nugget2d import lm_builders as lm


def test_nugget_data_round_trips_in_both_layouts(tmp_path):
    docs = [("L0", "query\ttext\nwith breaks"), ("R0", "pos"), ("R1", "neg")]
    tasks = [Task("L0", ("R1", "R0"), 1)]
    write_dataset(tmp_path, docs, tasks)
    assert read_tasks(tmp_path / "tasks.jsonl") == tasks == read_tasks(tmp_path / "nugget-data" / "task.jsonl")
    assert json.loads((tmp_path / "nugget-data" / "task.jsonl").read_text())["source"] == "L0"
    assert read_docs(tmp_path / "docs.tsv") == read_docs(tmp_path / "nugget-data" / "docs.txt")
    assert read_docs(tmp_path / "docs.tsv")["L0"] == "query text with breaks"
    with pytest.raises(ValueError, match="not written"):
        write_dataset(tmp_path, docs[:2], tasks)
    with pytest.raises(ValueError, match="answer 2 outside"):
        Task("L0", ("R0", "R1"), 2)


def test_paper_adapters_read_local_files_in_hf_layout(tmp_path):
    import datasets

    datasets.Dataset.from_dict({"translation": [{"en": "Hi.", "zh": "你好。"}]}).to_parquet(tmp_path / "wmt.parquet")
    rows = paper.load_rows("wmt19", "train", str(tmp_path / "wmt*.parquet"))
    assert paper.wmt_pairs_from_rows(rows) == [("Hi.", "你好。")]
    lines = [" = Alpha = \n", " Lead text . \n", " = = History = = \n", " Old . \n", " = = References = = \n", " x \n",
             " = Beta = \n", " Only lead . \n"]
    datasets.Dataset.from_dict({"text": lines}).to_json(tmp_path / "wiki.jsonl")
    arts = from_wikitext103(paper.texts_from_rows(paper.load_rows("wikitext103", "train", str(tmp_path / "wiki.jsonl"))))
    assert [(a.title, a.sections) for a in arts] == [
        ("Alpha", [("", "Lead text ."), ("History", "Old .")]), ("Beta", [("", "Only lead .")])]
    squad = [{"context": "C", "question": "Q?", "answers": {"text": ["A"], "answer_start": [0]}},
             {"context": "C", "question": "none", "answers": {"text": [], "answer_start": []}}]
    assert paper.squad_from_rows(squad) == [("C", "Q?", ["A"])]  # every gold answer
    assert paper.cnn_from_rows([{"article": "Art", "highlights": "H", "id": "1"}]) == [("Art", "H")]
    (tmp_path / "pb.tsv").write_text("0.9\tA cat sat.\tA cat was sitting.\nB.\tBee.\n")
    assert paper.parabank_pairs(tmp_path / "pb.tsv") == [("A cat sat.", "A cat was sitting."), ("B.", "Bee.")]
    with pytest.raises(FileNotFoundError, match="no files match"):
        paper.load_rows("squad", "train", str(tmp_path / "missing*.json"))


def test_wikitext_subheadings_are_not_passage_text():
    """RR passages (Nugget app. A.2) are section prose: a deeper heading line such as
    ' = = = Early life = = = ' used to be kept inside its section's text."""
    lines = [" = Alpha = ", " Lead . ", " = = History = = ", " = = = Early life = = = ", " Born . ",
             " = = = = Detail = = = = ", " More . "]
    (article,) = from_wikitext103(lines)
    assert article.sections == [("", "Lead ."), ("History", "Born . More .")]


def test_prompts_are_the_appendix_c_templates():
    r = lm.qa_record("DOC", "Who?", "me")
    assert r["full_prompt"] == "[INST] DOC Based on the provided document, answer the following question: Who? [/INST]"
    assert r["prompt"] == "Based on the provided document, answer the following question: Who? [/INST]"
    s = lm.summary_record("DOC", "sum")
    assert s["full_prompt"] == "[INST] DOC Please summarize the above document in one sentence. [/INST]"
    assert lm.lmsumm_prompt(" ".join("w" * 1 for _ in range(25)), 0.1) == (
        "[INST] Please summarize the following text into 3 words: " + " ".join(["w"] * 25) + " [/INST]")


def test_segments_and_triples_on_a_real_tokenizer(bpe_dir):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(bpe_dir))
    ids = tok(" ".join(f"And word{i} saw the light." for i in range(60)), add_special_tokens=False)["input_ids"]
    segs = lm.lm_segments([ids], distant=32, recent=8)
    assert all(len(s["distant"]) == 32 and 1 <= len(s["recent"]) <= 8 for s in segs)
    assert [t for s in segs for t in s["distant"] + s["recent"]] == ids[: sum(len(s["distant"]) + len(s["recent"]) for s in segs)]
    triples = lm.continuation_triples([ids], doc=48, prompt=4, answer=12)
    assert triples and all(len(t["doc"]) == 48 and len(t["prompt"]) == 4 and 1 <= len(t["answer"]) <= 12 for t in triples)
    assert triples[0]["doc"] + triples[0]["prompt"] + triples[0]["answer"] == ids[:64]


def test_stand_ins_are_labelled_and_honest():
    passage = "The river rose. Alice met Bob in Paris in 1999. Nothing else happened."
    for seed in range(5):
        r = lm.cloze_qa(passage, np.random.default_rng(seed))
        assert r["stand_in"] == lm.QA_STAND_IN and r["answer"] in passage
        assert lm.BLANK in r["prompt"] and r["answer"] not in r["prompt"].split("blank:")[1]
    assert lm.cloze_qa("no capitals here at all.", np.random.default_rng(0)) is None
    s = lm.lead_summary("First sentence here. Then the body. And more.")
    assert s["answer"] == "First sentence here." and "First" not in s["document"] and s["stand_in"]
    assert lm.lead_summary("Only one sentence.") is None


def test_paper_lm_sources_keep_their_published_splits(tmp_path):
    """build_lm's paper sources: WikiText-103 articles (not lines) from validation / test as released,
    SQuAD's whole validation set as the QA test set, CNN/DailyMail as published."""
    from types import SimpleNamespace

    import datasets

    from stages.nugget2d.build_lm import TRAIN_OR_DEV, _labels, _paper_pools

    def write(name: str, split: str, columns: dict) -> None:
        datasets.Dataset.from_dict(columns).to_json(tmp_path / f"{name}-{split}.jsonl")

    article = [" = Alpha = \n", " Lead text . \n", " = = History = = \n", " Old . \n"]
    write("wiki", "validation", {"text": article})
    write("wiki", "test", {"text": article + [" = Beta = \n", " Other lead . \n"]})
    write("pile", "all", {"text": ["p1", "p2", "p3"]})
    qa = {"context": ["C"] * 4, "question": ["Q1?", "Q2?", "Q3?", "Q4?"],
          "answers": [{"text": ["A"], "answer_start": [0]}] * 4}
    write("squad", "train", qa)
    write("squad", "validation", {k: v[:3] for k, v in qa.items()})
    for split, n in (("train", 4), ("validation", 2), ("test", 3)):
        write("cnn", split, {"article": [f"{split} {i}" for i in range(n)], "highlights": ["h"] * n})
    cfg = SimpleNamespace(wiki_files=str(tmp_path / "wiki-{split}.jsonl"), wikitext_config="wikitext-103-v1",
                          pile_files=str(tmp_path / "pile-*.jsonl"), squad_files=str(tmp_path / "squad-{split}.jsonl"),
                          cnn_files=str(tmp_path / "cnn-{split}.jsonl"), dev_fraction=0.25)
    pools = _paper_pools(cfg)
    assert pools["wiki"].labels == ["dev", "test", "test"]  # one article per title, not one row per line
    assert pools["wiki"].items[0] == "".join(article).strip()  # as released: title and headings kept
    assert pools["qa"].labels == [TRAIN_OR_DEV] * 4 + ["test"] * 3  # every validation question is test
    assert pools["summ"].labels == ["train"] * 4 + ["dev"] * 2 + ["test"] * 3
    qa_splits = _labels(pools["qa"].labels, cfg, seed=0)
    assert qa_splits[4:] == ["test"] * 3 and sorted(qa_splits[:4]) == ["dev", "train", "train", "train"]
    assert sorted(_labels(pools["pile"].labels, cfg, seed=0)) == ["dev", "test", "train"]  # no published split
    one_pool = SimpleNamespace(**{**vars(cfg), "squad_files": str(tmp_path / "squad-*.jsonl")})
    assert _paper_pools(one_pool)["qa"].labels == [None] * 7  # a glob without {split}: split here
