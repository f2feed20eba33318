"""``nugget lm-eval``: lm_eval's CLI passes through, and without lm_eval the command says what
to install (exit 2) while every other module of the code base imports and the DAG builds
(the harness is an optional extra: ``make test`` without it passes)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pipelines.harness_cli import MISSING

ROOT = Path(__file__).resolve().parents[2]
HARNESS_LM = "stages.nugget2d.harness.lm"
# lm_eval blocked as an uninstalled package is: an import of it raises ImportError
BLOCK = "import sys; sys.modules['lm_eval'] = None\n"


def python(code: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=600)


def test_help_is_lm_eval_s(capsys):
    pytest.importorskip("lm_eval")
    from pipelines.nugget import main

    with pytest.raises(SystemExit) as exit_:
        main(["lm-eval", "run", "--help"])
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    assert "--model_args" in out and "--include_path" in out and "--log_samples" in out


def test_nugget_help_lists_lm_eval(capsys):
    from pipelines.nugget import main

    with pytest.raises(SystemExit):
        main(["--help"])
    assert "lm-eval" in capsys.readouterr().out


def test_without_lm_eval_the_command_names_the_extra():
    done = python(BLOCK + "from pipelines.nugget import main\n"
                          "sys.exit(main(['lm-eval', '--model', 'nugget2d', '--tasks', 'x']))\n")
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip() == MISSING


def test_without_lm_eval_every_other_module_imports_and_the_dag_builds():
    done = python(BLOCK + f"""
import importlib, json, pkgutil
names = []
for top in ("nugget_core", "stages", "pipelines"):
    package = importlib.import_module(top)
    for info in pkgutil.walk_packages(package.__path__, top + "."):
        if info.name != {HARNESS_LM!r}:
            importlib.import_module(info.name)
            names.append(info.name)
from pipelines.cli import default_dag
dag = default_dag()
print(json.dumps({{"modules": names, "stages": [dag.get(n).name for n in dag.closure(["report"])]}}))
""")
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert "stages.nugget2d.harness.scoring" in found["modules"] and "pipelines.harness_cli" in found["modules"]
    assert HARNESS_LM not in found["modules"]
    assert "report" in found["stages"] and "train_nugget2d" in found["stages"]
    left_out = python(BLOCK + f"import {HARNESS_LM}")  # the one module left out does need lm_eval
    assert left_out.returncode == 1 and "lm_eval" in left_out.stderr.strip().splitlines()[-1]
