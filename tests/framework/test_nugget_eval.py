"""``nugget eval`` (pipelines/evaluate): each checkpoint family through its evaluation stage's
recipe on 2-3 examples, the 95% interval lines, ``--output``'s files, the degenerate-output
flag, and a one-line error with its exit code for each bad input. Tiny untrained models: the
tests check the command, not model quality."""

from __future__ import annotations

import json

import pytest

from pipelines.nugget import main
from stages.common.resampling import MIN_UNITS
from tests.framework.cli_fixtures import complete_output, make_nugget, make_nugget2d, make_re

DOC = "the river delta was born in Paris of a city."


@pytest.fixture
def root(tmp_path) -> str:
    """An empty artifact root, as a config override."""
    return f"run.artifact_root={tmp_path / 'artifacts'}"


@pytest.fixture(scope="module")
def nugget2d(tmp_path_factory):
    folder, base, _, _ = make_nugget2d(tmp_path_factory.mktemp("nugget2d"))
    return folder, base


@pytest.fixture(scope="module")
def nugget(tmp_path_factory):
    return make_nugget(tmp_path_factory.mktemp("train_nugget"))


@pytest.fixture(scope="module")
def re_model(tmp_path_factory):
    return make_re(tmp_path_factory.mktemp("train_re"))


def _jsonl(path, rows) -> str:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


def _no_traceback(err: str) -> None:
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_qa_prints_intervals_writes_rows_and_flags_one_answer_for_every_input(nugget2d, tmp_path, capsys):
    """The same document and question three times: a greedy model answers the same each time,
    which the command flags (`stages.common.degenerate.constant_outputs`); three questions on one
    document are one unit (they share the model's one reading of it): no interval from one."""
    folder, base = nugget2d
    data = _jsonl(tmp_path / "qa.jsonl", [{"id": f"q{i}", "document": DOC, "instruction": "Where?", "answer": "Paris"}
                                          for i in range(3)])
    out = tmp_path / "out"
    assert main(["eval", str(folder), "--base-model", str(base), "--task", "qa", "--data", data,
                 "--output", str(out), "eval.qa.max_new_tokens=3", "prompts.format=inst"]) == 0
    captured = capsys.readouterr()
    line = next(x for x in captured.out.splitlines() if x.strip().startswith("accuracy = "))
    assert line.endswith(f"(no interval: below {MIN_UNITS} documents) (n = 3)")
    assert "warning: uninformative outputs: constant output" in captured.err and "of 3 outputs" in captured.err
    rows = [json.loads(x) for x in (out / "examples.jsonl").read_text().splitlines()]
    assert [r["id"] for r in rows] == ["q0", "q1", "q2"] and all("output" in r and "correct" in r for r in rows)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["task"] == "qa" and summary["n"] == 3 and summary["checkpoint"] == str(folder)
    accuracy = summary["metrics"]["accuracy"]
    assert accuracy["n"] == 3 and accuracy["low"] is None is accuracy["high"] and accuracy["mean"] is not None
    assert "constant output" in summary["degenerate"]["flag"] and summary["degenerate"]["distinct"] == 1


def test_summarization_scores_all_pipeline_records_by_default(nugget2d, root, tmp_path, capsys):
    """No --limit: every record of the split build_lm wrote; ROUGE over the 3 articles (no interval
    from 3), then the lead-3 floor's row on the same articles."""
    folder, base = nugget2d
    records = [{"id": f"s{i}", "split": "test", "document": f"{DOC} number {i}.", "instruction": "Summarize.",
                "answer": "a delta"} for i in range(3)]
    args = ["eval", str(folder), "--base-model", str(base), "--task", "summarization", root,
            "eval.summarization.max_new_tokens=2", "prompts.format=inst"]
    assert main(args) == 3
    err = capsys.readouterr().err
    assert "stage 'build_lm' has no output" in err and "nugget run run.targets=[build_lm]" in err
    _no_traceback(err)
    complete_output(root, "build_lm", {"summarization.jsonl": "".join(json.dumps(r) + "\n" for r in records)})
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "3 examples of" in out
    assert all(f"  {m} = " in out and f"(no interval: below {MIN_UNITS} articles) (n = 3)" in out
               for m in ("rouge1", "rouge2", "rougeL"))
    assert "\n  lead-3 (floor):\n" in out


def test_lm_perplexity_per_context_configuration(nugget2d, root, capsys):
    """--task lm: eval_lm's recipe on build_lm's segments with calibrate_threshold's Lambda; one
    block of lines per context configuration, each perplexity's n the articles its segments were
    cut from (the unit its bootstrap interval resamples: none from 2)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder, base = nugget2d
    args = ["eval", str(folder), "--base-model", str(base), "--task", "lm", "--limit", "3", root,
            "eval.lm.corpora=[wiki]", "eval.lm.contexts=[{total_states: 6, compressed_tokens: 10, context_tokens: 3}, "
            "{total_states: 5, compressed_tokens: 8, context_tokens: 2}]"]
    built = complete_output(root, "build_lm", {"qa.jsonl": "", "summarization.jsonl": ""})
    ids = [5 + i % 40 for i in range(400)]
    rows = [{"split": "test" if i < 4 else "train", "document_id": f"wiki-{i // 2}", "distant": ids[s : s + 16],
             "recent": ids[s + 16 : s + 24]} for i, s in enumerate(range(0, 320, 24))]
    pq.write_table(pa.Table.from_pylist(rows), built / "lm_wiki.parquet")
    assert main(args) == 3
    assert "stage 'calibrate_threshold' has no output" in capsys.readouterr().err
    complete_output(root, "calibrate_threshold", {"threshold.json": json.dumps(
        {"lambda": 0.0, "ratio": 0.5, "scorer_stage": "x", "scorer_fingerprint": "y", "scorer_window": 8, "metrics": {}})})
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "\n  nugget2d 6/10/3:\n" in out and "\n  nugget2d 5/8/2:\n" in out
    for metric in ("wiki_subword_ppl", "wiki_word_ppl"):
        lines = [x for x in out.splitlines() if x.strip().startswith(f"{metric} = ")]
        assert len(lines) == 2 and all(x.startswith("    ") and x.endswith("(n = 2)") for x in lines)
    assert f"(no interval: below {MIN_UNITS} articles)" in next(x for x in out.splitlines() if "wiki_subword_ppl = " in x)


def test_reconstruction_of_a_nugget_checkpoint_from_its_stage_folder(nugget, tmp_path, capsys):
    """A train_nugget output folder stands for its model; the AE objective (trained.json) scores
    the decoded text against the source; BLEU with its bootstrap interval over the documents (from 15)."""
    data = _jsonl(tmp_path / "docs.jsonl", [{"source": DOC, "target": "x"}] * 3)
    out = tmp_path / "out"
    assert main(["eval", str(nugget), "--data", data, "--output", str(out), "eval.beam_size=1",
                 "eval.reconstruction_extra_tokens=1"]) == 0
    captured = capsys.readouterr()
    assert f"reconstruction: Nugget checkpoint {nugget / 'model'}" in captured.out
    line = next(x for x in captured.out.splitlines() if x.strip().startswith("bleu = "))
    # the interval resamples the documents, as eval_reconstruction's: none from 3 (stages.common.resampling)
    assert line.endswith(f"(no interval: below {MIN_UNITS} documents) (n = 3)")
    assert "warning: uninformative outputs" in captured.err
    rows = [json.loads(x) for x in (out / "examples.jsonl").read_text().splitlines()]
    assert [r["id"] for r in rows] == ["line-1", "line-2", "line-3"]
    assert all(r["target"] == r["document"] == DOC and "chrf" in r for r in rows)  # the stage's sample rows
    summary = json.loads((out / "summary.json").read_text())
    assert summary["task"] == "reconstruction" and summary["objective"] == "ae" and summary["degenerate"]["flag"]


def test_similarity_ranks_candidates_by_the_nuggets(nugget, tmp_path, capsys):
    """--task rr on a folder in build_rr's layout: MRR with ± 1.96 standard errors over tasks,
    each example's ranking (its output: the top hit's text)."""
    from stages.corpora.nugget_data import Task, write_dataset

    docs = [(f"d{i}", f"{DOC} number {i} of the river.") for i in range(4)]
    tasks = [Task(f"d{q}", tuple(f"d{c}" for c in range(4) if c != q), 0) for q in range(3)]
    (tmp_path / "rr").mkdir()
    write_dataset(tmp_path / "rr", docs, tasks)
    out = tmp_path / "out"
    assert main(["eval", str(nugget), "--task", "rr", "--data", str(tmp_path / "rr"), "--output", str(out)]) == 0
    captured = capsys.readouterr()
    line = next(x for x in captured.out.splitlines() if x.strip().startswith("mrr = "))
    assert line.endswith(f"(no interval: below {MIN_UNITS} query documents) (n = 3)")  # resampled by query, as the stage
    rows = [json.loads(x) for x in (out / "examples.jsonl").read_text().splitlines()]
    assert [sorted(r["ranking"]) for r in rows] == [sorted(t.candidates) for t in tasks]  # the stage's sample rows
    assert all(r["output"] == dict(docs)[r["top_hit"]] and "reciprocal_rank_x100" in r for r in rows)
    assert json.loads((out / "summary.json").read_text())["metrics"]["mrr"]["n"] == 3


def test_reconstruction_without_pipeline_data_names_the_stage(nugget, root, capsys):
    assert main(["eval", str(nugget / "model"), root]) == 3
    err = capsys.readouterr().err
    assert "stage 'build_mt_docs' has no output" in err
    _no_traceback(err)


def test_restoration_of_a_re_checkpoint(re_model, tmp_path, capsys):
    """train_re's record gives the system's name and truncation; PPL and ROUGE with their
    bootstrap intervals over the texts (each its own unit: the recipe's, none below MIN_UNITS units)."""
    texts = [f"{t} {i}" for i in range(7) for t in ("the river delta was born.", "a city of the north.",
                                                    "the delta of a river in the north.")][:MIN_UNITS]
    out = tmp_path / "out"
    assert main(["eval", str(re_model), "--data", _jsonl(tmp_path / "t.jsonl", [{"text": t} for t in texts]),
                 "--output", str(out), "--limit", str(MIN_UNITS), "eval.re.beam_size=1", "eval.re.extra_tokens=1"]) == 0
    captured = capsys.readouterr()
    assert "RE system n1_cross" in captured.out and "truncated at 32 tokens" in captured.out
    for metric in ("ppl", "rouge1", "rougeL"):
        line = next(x for x in captured.out.splitlines() if x.strip().startswith(f"{metric} = "))
        assert "± " in line and line.endswith(f"(n = {MIN_UNITS})")
    rows = [json.loads(x) for x in (out / "examples.jsonl").read_text().splitlines()]
    assert [r["target"] for r in rows] == texts and all("output" in r and "rouge1" in r and "encoded" in r for r in rows)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["task"] == "restoration" and summary["metrics"]["ppl"]["low"] is not None


@pytest.mark.parametrize("case, message", [
    ("missing", "no such file or folder"),
    ("file", "a file, not a model folder"),
    ("empty", "is not a checkpoint: no model folder marker"),
    ("systems", "holds 1 systems; pass one of their model folders"),
    ("wrong_task", "is a Nugget checkpoint, whose tasks are reconstruction"),
    ("no_task", "is a Nugget2D checkpoint: pass --task (one of qa, summarization, lm)"),
    ("lm_data", "--task lm reads build_lm's token-id segments only"),
    ("bad_json", "line 2 is not JSON"),
    ("missing_field", "line 1 has no document"),
    ("no_data_file", "--data /nope.jsonl: no such file"),
    ("bad_similarity_folder", "has neither tasks.jsonl+docs.tsv"),
])
def test_bad_input_is_one_line_with_exit_2(case, message, nugget, nugget2d, re_model, tmp_path, capsys):
    folder, _ = nugget2d
    (tmp_path / "empty").mkdir()
    (tmp_path / "a.txt").write_text("x")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"source": "a", "target": "b"}\n{oops\n')
    no_doc = _jsonl(tmp_path / "nodoc.jsonl", [{"instruction": "q", "answer": "a"}])
    argv = {"missing": [str(tmp_path / "nope")], "file": [str(tmp_path / "a.txt")],
            "empty": [str(tmp_path / "empty")], "systems": [str(re_model.parents[2])], "wrong_task": [str(nugget), "--task", "qa"],
            "no_task": [str(folder)], "lm_data": [str(folder), "--task", "lm", "--data", no_doc], "bad_json": [str(nugget), "--data", str(bad)],
            "missing_field": [str(folder), "--task", "qa", "--data", no_doc],
            "no_data_file": [str(nugget), "--data", "/nope.jsonl"],
            "bad_similarity_folder": [str(nugget), "--task", "pi", "--data", str(tmp_path / "empty")]}[case]
    assert main(["eval", *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and message in err
    _no_traceback(err)
