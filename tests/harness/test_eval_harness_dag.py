"""eval_harness is optional in the DAG (``eval.harness.enabled``, `Stage.switch`): off, the DAG
of that config has no such stage, the report reads without it, nothing imports lm_eval; on without
lm_eval, the preflight names the extra. And its config section's checks."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from stages.config import ConfigError, load_config
from stages.config.validate import errors as config_errors
from stages.framework.dag import Dag, DagError
from stages.framework.plan_checks import stage_config_problems
from stages.framework.stage import Stage, StageContext

ROOT = Path(__file__).resolve().parents[2]


def test_switch_puts_the_stage_and_the_reports_edge_in_or_out():
    from stages.registry import DAG

    on = DAG.for_config(load_config(["eval.harness.enabled=true"]))
    assert "eval_harness" in on.order and "eval_harness" in on.upstream["report"]
    assert {"prepare_lm", "build_lm", "train_nugget2d", "train_nugget2d_ar", "calibrate_threshold"} == set(
        on.upstream["eval_harness"])
    off = DAG.for_config(load_config(["eval.harness.enabled=false"]))
    assert "eval_harness" not in off.order and "eval_harness" not in off.upstream["report"]
    assert set(off.upstream["report"]) == set(on.upstream["report"]) - {"eval_harness"}
    assert len(off.order) == len(on.order) - 1
    with pytest.raises(DagError, match=r"'eval_harness' is off in this config \(eval.harness.enabled: false\)"):
        off.closure(["eval_harness"])
    assert DAG.stages["report"].upstream == DAG.upstream["report"]  # the classes are left as registered


class _Maker(Stage):
    name = "maker"
    config_keys = ("eval.harness",)
    switch = "eval.harness.enabled"

    def run(self, ctx: StageContext) -> None:  # never run here
        raise AssertionError


class _Needs(Stage):
    name = "needs"
    upstream = ("maker",)

    def run(self, ctx: StageContext) -> None:
        raise AssertionError


def test_a_stage_requiring_a_switched_off_one_is_a_config_error(tmp_path):
    from pipelines.cli import main_stage

    dag = Dag([_Maker, _Needs])
    with pytest.raises(DagError, match="stage 'needs' requires 'maker', which eval.harness.enabled: false turns off"):
        dag.for_config(load_config(["eval.harness.enabled=false"]))
    assert dag.for_config(load_config(["eval.harness.enabled=true"])) is dag
    assert main_stage(["needs", "eval.harness.enabled=false", f"run.artifact_root={tmp_path}"], dag=dag) == 2


def test_lm_eval_missing_is_one_preflight_line_naming_the_extra(monkeypatch):
    import importlib.util

    from stages.nugget2d.eval_harness import EvalHarness
    from stages.nugget2d.harness.run import harness_missing

    cfg = load_config(["eval.harness.enabled=true"])
    if harness_missing() == "":  # with the extra installed: nothing to say
        assert stage_config_problems([EvalHarness], cfg) == []
    assert stage_config_problems([EvalHarness], load_config(["eval.harness.enabled=false"])) == []  # off
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "lm_eval" else real(name, *a))
    (problem,) = stage_config_problems([EvalHarness], cfg)
    assert problem.message == ("eval_harness: eval.harness.enabled is true but lm_eval is not installed; install the "
                               "harness extra: pip install -e '.[harness]' (or set eval.harness.enabled=false)")


def test_without_lm_eval_the_dag_builds_and_only_the_switched_on_stage_objects():
    """lm_eval blocked (as an install without the extra): the registry imports, the DAG with the
    switch off has no stage whose preflight objects, with it on exactly one line names the extra."""
    script = (
        "import sys; sys.modules['lm_eval'] = None\n"
        "from stages.config import load_config\n"
        "from stages.framework.plan_checks import stage_config_problems\n"
        "from stages.registry import DAG\n"
        "for flag in ('false', 'true'):\n"
        "    g = DAG.for_config(load_config([f'eval.harness.enabled={flag}']))\n"
        "    cfg = load_config([f'eval.harness.enabled={flag}'])\n"
        "    lines = [p.message for p in stage_config_problems([g.stages[n] for n in g.order], cfg)]\n"
        "    print(flag, lines)\n"
        "assert not [m for m, mod in sys.modules.items() if m.startswith('lm_eval') and mod is not None]\n"
    )
    out = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120,
                         env={**__import__("os").environ, "PYTHONPATH": str(ROOT)})
    assert out.returncode == 0, out.stderr
    off, on = out.stdout.strip().splitlines()
    assert off == "false []"
    assert on.startswith("true [\"eval_harness: eval.harness.enabled is true but lm_eval is not installed") and \
        on.count("pip install -e '.[harness]'") == 1


@pytest.mark.parametrize(("override", "message"), [
    ("eval.harness.systems=[nugget2d,beam]", "systems"),
    ("eval.harness.systems=[]", "systems"),
    ("eval.harness.tasks=[]", "tasks"),
    ("eval.harness.tasks=[nugget_qa,nugget_qa]", "tasks"),
    ("eval.harness.ratio=0", "ratio"),
    ("eval.harness.ratio=1.5", "ratio"),
    ("eval.harness.context=middle", "context"),
    ("eval.harness.cloze_choices=1", "cloze_choices"),
    ("eval.harness.recent_tokens=0", "recent_tokens"),
])
def test_config_errors_name_the_field(override, message):
    try:
        found = config_errors(load_config([override], check=False))
    except ConfigError as exc:  # a choice outside the allowed values fails at load
        found = [str(exc)]
    assert any(f"eval.harness.{message}" in e for e in found), found


def test_rehearsal_may_shrink_the_harness_run():
    cfg = load_config(["profile=gpu1", "rehearsal=true"])
    assert cfg.eval.harness.enabled and cfg.eval.harness.limit == 2 and cfg.eval.harness.max_gen_toks == 8
