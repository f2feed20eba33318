"""benchmarks/probe_replay.py cannot rot: its case machinery (benchmarks/probe_harness.py)
runs two cheap dry-run cases against the real CLI (no Ray, no base run: an empty root), and
a missed expectation makes a case not clean."""

from __future__ import annotations

from benchmarks import probe_harness as harness
from benchmarks import probe_replay as replay


def _case(name: str) -> harness.Case:
    (case,) = [c for c in replay.CASES if c.name == name]
    return case


def test_two_dry_run_cases_replay_clean(tmp_path):
    base = tmp_path / "base"
    base.mkdir()
    rows = [replay.run_case(_case(name), base, tmp_path / "cases")
            for name in ("profile_outside_conf", "vocabulary_1e23")]
    assert [r["clean"] for r in rows] == [True, True], rows
    profile, vocab = rows
    assert profile["exit"] == 2 and profile["command"].startswith(
        "python pipelines/full.py --dry-run run.artifact_root=<root> profile=../")
    assert profile["command"].endswith("<work>/evil") and any("conf/profile/" in ln for ln in profile["key_lines"])
    assert vocab["exit"] == 2 and any("model.seq2seq.tokenizer_vocab_size" in ln for ln in vocab["key_lines"])
    assert "| 8 late errors | vocabulary_1e23 | `python pipelines/full.py --dry-run" in replay.table(rows)


def test_a_missed_expectation_is_not_clean():
    ran = harness.Ran(["python"], 0, 2.0, "plan ...\nTraceback (most recent call last):\n  boom\n")
    checks = harness.judge(ran, harness.Expect(2, contains=["names stage"], absent=["boom"], max_seconds=1,
                                             extra={"own check": True}))
    assert checks == {"exit 2": False, "no traceback": False, "no Ray started": True, "says 'names stage'": False,
                      "does not say 'boom'": False, "within 1 s": False, "own check": True}
    assert harness.judge(harness.Ran(["python"], 2, 0.5, "error: names stage x"),
                        harness.Expect(2, contains=["names stage"])) == {
        "exit 2": True, "no traceback": True, "no Ray started": True, "says 'names stage'": True}
