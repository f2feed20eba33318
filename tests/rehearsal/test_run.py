"""The rehearsal's verdict on a report (`tests.rehearsal.run`): every table present with a
measured cell; and the stage lines it counts."""

from __future__ import annotations

import csv

from tests.rehearsal.run import STAGE_LINE, expected_tables, unrendered_tables

TABLES = expected_tables([1, 3, 5])  # the report's table files with RE's three sentence counts


def _table(folder, name: str, rows: list[dict]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / f"{name}.csv").open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def test_every_table_needs_a_measured_cell(tmp_path):
    measured = [{"system": "a", "bleu measured": "not run in this profile", "bleu published": "30.1"},
                {"system": "b", "bleu measured": "0.12 (n=4)", "bleu published": "31.0"}]
    for name in TABLES:
        _table(tmp_path / "tables", name, measured)
    assert len(TABLES) == 16 and "re_table8_k3" in TABLES and "re_table10" in TABLES
    assert unrendered_tables(tmp_path, TABLES) == []

    _table(tmp_path / "tables", "nugget_fig4", [measured[0]])  # only the published value
    _table(tmp_path / "tables", "re_table8_k3", [measured[0]])  # one part of a split table
    (tmp_path / "tables" / "re_table9.csv").unlink()
    problems = unrendered_tables(tmp_path, TABLES)
    assert len(problems) == 3
    assert problems[0].startswith("nugget_fig4: no measured cell")
    assert problems[1].startswith("re_table8_k3: no measured cell")
    assert problems[2].startswith("re_table9: no re_table9.csv")


def test_stage_lines_count_run_cached_and_reused_stages():
    log = ("[ 1/33 12s eta 19m11s] tokenizer              done   in 4s -> /x\n"
           "[ 2/33 0s eta ?] build_re_data          cached key=a3b9\n"
           "[ 3/33 0s eta ?] train_re               reused the output a concurrent run published -> /y\n"
           "[ 4/33 0s eta ?] eval_qa                start  miss key=b8\n")
    assert dict(STAGE_LINE.findall(log)) == {"tokenizer": "done", "build_re_data": "cached", "train_re": "reused"}


def test_traceback_excerpts_repeat_each_traceback_with_its_exception():
    from tests.rehearsal.run import traceback_excerpts

    log = ("[ 3/33] corpus_stats done\n"
           "(TrainWorker pid=41, ip=127.0.0.1) some context\n"
           "(TrainWorker pid=41, ip=127.0.0.1) Traceback (most recent call last):\n"
           "(TrainWorker pid=41, ip=127.0.0.1)   File \"x.py\", line 3, in f\n"
           "\x1b[36m(TrainWorker pid=41, ip=127.0.0.1)\x1b[0m     g()\n"
           "(TrainWorker pid=41, ip=127.0.0.1) ValueError: bad shape\n"
           "[ 4/33] eval_lm done\n"
           "Traceback (most recent call last):\n"
           "  File \"y.py\", line 1, in <module>\n"
           "KeyError: 'k'\n"
           "after\n")
    first, second = traceback_excerpts(log, before=1)
    assert first.splitlines() == ["some context", "Traceback (most recent call last):",
                                  '  File "x.py", line 3, in f', "    g()", "ValueError: bad shape"]
    assert second.splitlines()[-1] == "KeyError: 'k'" and "after" not in second
    assert traceback_excerpts("all fine\n") == []
