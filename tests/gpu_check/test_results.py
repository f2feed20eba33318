"""What a call returns fits the device's limits, reads as one summary, and collects back."""

from __future__ import annotations

import json
import tarfile

import pytest

from benchmarks.gpu_check.collect import collect
from benchmarks.gpu_check.limits import RETURN_FILE_BYTES, RETURN_FILES, RETURN_NAME
from benchmarks.gpu_check.results import cut_middle, write_results
from benchmarks.gpu_check.summary import first_table, render_all, render_call

JUNIT = """<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest">
<testcase classname="tests.gpu.test_gpu_decoding" name="test_graph[bf16]"/>
<testcase classname="tests.gpu.test_gpu_training" name="test_trains[ddp-bf16]"><failure message="x">boom</failure></testcase>
<testcase classname="tests.gpu.test_gpu_stages" name="test_eval"><skipped message="no"/></testcase>
</testsuite></testsuites>"""


def fake_call(root, number=2, date="2026-12-01"):
    """A call's working folder as the runner and its parts leave it."""
    work = root / f"work{number}"
    parts = [
        {"part": "gpu-info", "status": "ok", "rc": 0, "seconds": 4.0, "timeout_s": 20, "reason": "", "log": "gpu-info.log"},
        {"part": "pytest-gpu", "status": "failed", "rc": 1, "seconds": 200.0, "timeout_s": 270, "reason": "",
         "log": "pytest-gpu.log"},
        {"part": "decode", "status": "timed_out", "rc": -15, "seconds": 140.0, "timeout_s": 140,
         "reason": "stopped at its limit of 140 s (process group killed)", "log": "decode.log"},
        {"part": "gpu1", "status": "skipped", "rc": None, "seconds": 0.0, "timeout_s": 320,
         "reason": "missing: ray (call 1 not run on this machine? calls must be issued back to back)", "log": "gpu1.log"},
    ]
    (work / "gpu-info").mkdir(parents=True)
    (work / "status.json").write_text(json.dumps({"call": number, "title": "the gpu tests", "mode": "device",
                                                  "started_utc": f"{date}T10:00:00+00:00", "budget_s": 410,
                                                  "finished": True, "parts": parts}))
    (work / "gpu-info" / "env.json").write_text(json.dumps({"device_name": "NVIDIA H200", "torch": "2.11.0"}))
    (work / "pytest-gpu").mkdir()
    (work / "pytest-gpu" / "junit.xml").write_text(JUNIT)
    (work / "decode").mkdir()
    rows = "".join(f"| {4096 * (i + 1)} | {i}.5 |\n" for i in range(10))
    (work / "decode" / "nugget2d_decode_cuda.md").write_text(f"# Decode, H200\n\ntext\n\n| context | ms |\n|---:|---:|\n{rows}")
    (work / "gpu1").mkdir()
    (work / "gpu1" / "stages.json").write_text(json.dumps({"stages": [
        {"stage": "train_nugget", "status": "done", "seconds": 61.0, "peak_gib": 12.25, "overlapped": ["build_lm"]},
        {"stage": "eval_qa", "status": "running", "seconds": 30.0, "peak_gib": None, "overlapped": []}],
        "stopped": "stopped after 290 s", "notes": ["evaluation times are upper bounds"]}))
    (work / "pytest-gpu.log").write_text("x" * 100)
    return work


def test_the_summary_shows_parts_tests_benchmarks_stages_and_what_did_not_run(tmp_path):
    text = render_call(fake_call(tmp_path))
    assert "| pytest-gpu | failed | 200 | 270 |" in text and "NVIDIA H200" in text
    assert "1 passed, 1 failed, 0 error, 1 skipped" in text
    assert "FAILED tests.gpu.test_gpu_training::test_trains[ddp-bf16]" in text
    assert "| 4096 | 0.5 |" in text and "| 40960 | 9.5 |" not in text and "6 more rows" in text
    assert "| train_nugget | done | 61 | 12.2 | build_lm |" in text and "stopped after 290 s" in text
    assert "upper bounds" in text
    assert "- gpu1: skipped: missing: ray (call 1 not run" in text and "- decode: timed_out" in text
    assert len(text.splitlines()) < 80  # one screen


def test_first_table_keeps_small_tables_whole():
    md = "# t\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\nafter\n| c |\n"
    assert first_table(md) == ["# t", "| a | b |", "|---|---|", "| 1 | 2 |"]


def test_returned_files_keep_the_limits_and_an_oversize_log_is_cut_in_the_middle(tmp_path):
    work = fake_call(tmp_path)
    huge = b"START\n" + bytes(range(256)) * 8000 + b"\nEND\n"  # ~2 MB, incompressible enough
    (work / "decode.log").write_bytes(huge)
    (work / "core.bin").write_bytes(b"\0" * 300_000)
    out = tmp_path / "out"
    files = write_results(work, out, 2, render_call(work), limit=200_000, cap=150_000)
    returned = list(out.iterdir())
    assert sorted(returned) == sorted(files) and len(returned) <= RETURN_FILES
    assert all(RETURN_NAME.match(f.name) and f.stat().st_size <= RETURN_FILE_BYTES for f in returned)
    assert (out / "call2-results.tar.gz").stat().st_size <= 200_000
    with tarfile.open(out / "call2-results.tar.gz") as tar:
        log = tar.extractfile("decode.log").read()
        left_out = tar.extractfile("left_out.txt").read().decode()
    assert log.startswith(b"START") and log.endswith(b"END\n") and b"cut from the middle" in log
    assert len(log) < len(huge) and "core.bin" in left_out
    assert cut_middle(b"short", 100) == b"short"


def test_collect_unpacks_into_the_date_folder_and_summarises_every_call(tmp_path):
    returned = tmp_path / "returned"
    for n in (1, 2):
        work = fake_call(tmp_path, n)
        write_results(work, returned / f"r{n}", n, render_call(work))
    roots = collect(returned, results=tmp_path / "results")
    root = tmp_path / "results" / "2026-12-01"
    assert roots == [root]
    assert json.loads((root / "call2" / "status.json").read_text())["call"] == 2
    assert (root / "call1" / "pytest-gpu" / "junit.xml").read_text() == JUNIT
    summary = (root / "summary.md").read_text()
    assert "## Call 1" in summary and "## Call 2" in summary and summary == render_all(root)


def test_run_returns_its_files_even_for_a_part_that_fails(tmp_path):
    from benchmarks.gpu_check.__main__ import main

    out, work = tmp_path / "OUT", tmp_path / "work"
    assert main(["run", "--call", "2", "--only", "gpu-info", "--out", str(out), "--work", str(work)]) == 0
    assert sorted(f.name for f in out.iterdir()) == ["call2-results.tar.gz", "call2-summary.md"]
    status = json.loads((work / "status.json").read_text())
    assert [p["part"] for p in status["parts"]] == ["gpu-info"] and status["finished"]
    assert "| gpu-info |" in (out / "call2-summary.md").read_text()


def test_parts_are_selected_by_name():
    from benchmarks.gpu_check.calls import CALL1, select_parts

    assert [p.name for p in select_parts(CALL1, ["stash"])] == ["stash"]
    assert [p.name for p in select_parts(CALL1)] == [p.name for p in CALL1.parts]
    with pytest.raises(SystemExit, match="no part"):
        select_parts(CALL1, ["nope"])
