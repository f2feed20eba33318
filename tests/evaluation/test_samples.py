"""The shared per-sample schema (stages/evaluation/samples.py): flat rows with flags, uniform
table columns, texts cut in the table only, and the file and table a stage logs."""

from __future__ import annotations

import json

import pytest

from stages.evaluation.samples import CUT_MARK, MIN_CUT, TABLE_FILE, Sample, log_samples, table_rows


def test_row_is_flat_with_flags_and_refuses_a_name_twice():
    row = Sample("q1", "full", {"document": "d", "question": "q"}, "a", "a a a a a a a a", {"correct": True},
                 {"ratio": 0.1}).row()
    assert list(row) == ["id", "system", "ratio", "document", "question", "target", "output", "correct",
                         "empty_output", "degenerate"]
    assert (row["empty_output"], row["degenerate"]) == (False, True)
    assert Sample(1, "s", {}, "t", "  ", {}).row()["empty_output"] is True
    assert Sample(1, "s", {}, "t", None, {"ppl": 2.0}).row()["degenerate"] is None
    assert Sample(1, "s", {}, "t", "", {}, generated=False).row()["empty_output"] is None
    with pytest.raises(ValueError, match=r"\['target'\] given twice"):
        Sample(1, "s", {"target": "x"}, "t", "o", {}).row()


def test_table_rows_are_uniform_and_cut_long_texts_only_past_the_budget():
    rows = [{"id": 1, "text": "x" * 1000, "hits": [1, 2]}, {"id": 2, "ppl": float("nan")}]
    table = table_rows(rows)
    assert [list(r) for r in table] == [["id", "text", "hits", "ppl"]] * 2
    assert table[0]["text"] == "x" * 1000 and table[0]["hits"] == "[1, 2]" and table[1]["ppl"] is None
    cut = table_rows(rows, budget=900)  # two texts: each cut to 450 characters
    assert cut[0]["text"] == "x" * 450 + CUT_MARK and cut[0]["hits"] == "[1, 2]" and rows[0]["text"] == "x" * 1000
    assert table_rows(rows, budget=10)[0]["text"] == "x" * MIN_CUT + CUT_MARK


class _Ctx:
    def __init__(self) -> None:
        self.artifacts: list[str] = []
        self.tables: dict[str, list[dict]] = {}

    def log_artifact(self, path):
        self.artifacts.append(path.name)

    def log_table(self, rows, artifact_file):
        self.tables[artifact_file] = rows


def test_log_samples_writes_every_row_whole_and_logs_the_table(tmp_path):
    rows = [Sample(i, "s", {"document": "d" * 10}, "t", "o", {"m": i}).row() for i in range(3)]
    ctx = _Ctx()
    log_samples(ctx, tmp_path / "examples.jsonl", rows)
    assert [json.loads(x) for x in (tmp_path / "examples.jsonl").read_text().splitlines()] == rows
    assert ctx.artifacts == ["examples.jsonl"] and ctx.tables[TABLE_FILE] == rows
