"""A call's parts run independently, each within its limit and the call's budget."""

from __future__ import annotations

import json
import os
import sys
import time

from benchmarks.gpu_check.environment import RunEnvironment
from benchmarks.gpu_check.parts import Call, Part
from benchmarks.gpu_check.runner import CallRunner, max_seconds


def py(code: str) -> tuple[str, ...]:
    return ("{py}", "-c", code)


def run(tmp_path, parts, budget=60, timeout=120):
    env = RunEnvironment("device", site=tmp_path / "site", work=tmp_path / "work", scratch=tmp_path,
                         sources=tmp_path / "sources", python=sys.executable)
    call = Call(1, "test", (), timeout, tuple(parts))
    records = CallRunner(call, env, env.work, budget_s=budget, echo=lambda _: None).run()
    return {r["part"]: r for r in records}, env.work


def test_a_failing_and_a_timed_out_part_do_not_stop_the_next(tmp_path):
    pidfile = tmp_path / "grandchild.pid"
    sleeper = ("import subprocess, sys, time; "
               f"p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); "
               f"open({str(pidfile)!r}, 'w').write(str(p.pid)); print('sleeping', flush=True); time.sleep(60)")
    start = time.monotonic()
    records, work = run(tmp_path, [
        Part("fails", py("import sys; print('boom'); sys.exit(3)"), 20, "fails"),
        Part("sleeps", py(sleeper), 3, "sleeps past its limit"),
        Part("writes", py("open('{dir}/ok.txt', 'w').write('ok')"), 20, "runs after both"),
    ])
    assert time.monotonic() - start < 25
    assert records["fails"]["status"] == "failed" and records["fails"]["rc"] == 3
    assert "boom" in (work / "fails.log").read_text()
    slept = records["sleeps"]
    assert slept["status"] == "timed_out" and slept["timed_out"] and 2.5 < slept["seconds"] < 15
    assert "sleeping" in (work / "sleeps.log").read_text()  # unbuffered: the output before the kill is kept
    grandchild = int(pidfile.read_text())
    time.sleep(0.2)
    assert not os.path.exists(f"/proc/{grandchild}") or "Z" in open(f"/proc/{grandchild}/stat").read().split()[2]
    assert records["writes"]["status"] == "ok" and (work / "writes" / "ok.txt").read_text() == "ok"
    status = json.loads((work / "status.json").read_text())
    assert status["finished"] and [p["status"] for p in status["parts"]] == ["failed", "timed_out", "ok"]
    assert all(p["command"] for p in status["parts"])


def test_the_call_budget_caps_each_part_and_skips_what_no_longer_fits(tmp_path):
    records, _ = run(tmp_path, [
        Part("long", py("import time; time.sleep(60)"), 100, "limit 100 s, budget 6 s"),
        Part("next", py("pass"), 10, "nothing left"),
    ], budget=6)
    assert records["long"]["status"] == "timed_out" and records["long"]["timeout_s"] == 6
    assert records["long"]["seconds"] < 18
    assert records["next"]["status"] == "skipped" and "no time left" in records["next"]["reason"]


def test_a_part_gets_its_time_left_as_max_seconds(tmp_path):
    records, work = run(tmp_path, [Part("echo", py("open('{dir}/s', 'w').write('{max_seconds}')"), 90, "x")])
    assert records["echo"]["status"] == "ok"
    assert int((work / "echo" / "s").read_text()) in (max_seconds(60) - 1, max_seconds(60))  # 60 s less ~ms
    assert max_seconds(90) == 60 and max_seconds(9) == 6


def test_a_missing_module_skips_the_part_naming_the_call_that_installs_it(tmp_path):
    records, _ = run(tmp_path, [
        Part("needs", py("pass"), 10, "x", needs=("json", "no_such_module_xyz")),
        Part("needs-path", py("pass"), 10, "x", needs_paths=("{sources}/absent",)),
        Part("after", py("pass"), 10, "still runs"),
    ])
    assert records["needs"]["status"] == "skipped"
    assert records["needs"]["reason"].startswith("missing: no_such_module_xyz (")
    assert "not run on this machine?" in records["needs"]["reason"]
    assert "missing: " in records["needs-path"]["reason"] and "call 1" in records["needs-path"]["reason"]
    assert records["after"]["status"] == "ok"


def test_a_background_part_runs_beside_the_next_and_is_waited_for(tmp_path):
    start = time.monotonic()
    records, work = run(tmp_path, [
        Part("bg", py("import time; time.sleep(2); open('{dir}/done', 'w').write('1')"), 20, "x", background=True),
        Part("fg", py("import time; time.sleep(2)"), 20, "beside it"),
        Part("needs-bg", py("import os; assert os.path.exists({dir!r}.replace('needs-bg', 'bg') + '/done')"), 20,
             "after it", after=("bg",)),
    ])
    assert [records[n]["status"] for n in ("bg", "fg", "needs-bg")] == ["ok", "ok", "ok"]
    assert time.monotonic() - start < 4 + 3  # bg and fg overlapped


def test_a_background_part_reaped_late_records_when_it_ended(tmp_path):
    records, _ = run(tmp_path, [
        Part("bg", py("pass"), 20, "x", background=True),
        Part("fg", py("import time; time.sleep(3)"), 20, "longer, beside it"),
    ])
    assert records["bg"]["status"] == "ok" and records["bg"]["seconds"] < 2.5 <= records["fg"]["seconds"]
