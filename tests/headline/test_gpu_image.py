"""The burst runs on the lent GPU's image: with Ray, MLflow, DeepSpeed, omegaconf, datasets, nltk,
bm25s and rouge_score impossible to import (and scipy too, which that image may lack), every
module of benchmarks.headline imports and a micro ``ae`` and ``nugget2d`` run to the end; the
intervals scipy would have given are left empty with the reason, and `fill_intervals` computes
them afterwards from the per-document statistics the results keep."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from benchmarks.headline.scoring import NO_SCIPY, fill_intervals

REPO = Path(__file__).resolve().parents[2]
ABSENT = ("ray", "mlflow", "deepspeed", "omegaconf", "datasets", "bm25s", "rouge_score", "nltk")

RUN = """
import sys
for name in {absent!r}:
    sys.modules[name] = None
import dataclasses, importlib, json, pkgutil
from pathlib import Path
import benchmarks.headline as headline
for module in pkgutil.iter_modules(headline.__path__):
    importlib.import_module("benchmarks.headline." + module.name)
from benchmarks.headline.ae import AERun
from benchmarks.headline.budget import Deadline
from benchmarks.headline.environment import run_device
from benchmarks.headline.nugget2d import Nugget2DRun
from tests.headline.micro import AE, N2D
out = Path({out!r})
AERun(Path({data!r}), out, dataclasses.replace(AE, ratios=(0.1,)), run_device("cpu"), Deadline(None)).run_all()
Nugget2DRun(Path({data!r}), out, N2D, run_device("cpu"), Deadline(None)).run_all(None, {lm!r})
print(json.dumps(sorted(name for name in sys.modules if name.split(".")[0] in {absent!r} and sys.modules[name])))
"""


def test_the_burst_runs_without_the_pipeline_stack_or_scipy(tiny_data, tiny_lm, tmp_path):
    folder, _ = tiny_data
    code = RUN.format(absent=(*ABSENT, "scipy"), out=str(tmp_path), data=str(folder), lm=str(tiny_lm))
    env = {**os.environ, "PYTHONPATH": str(REPO), "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, env=env,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == []
    ae = json.loads((tmp_path / "ae-r0.1.json").read_text())
    summary = json.loads((tmp_path / "nugget2d.json").read_text())
    assert ae["status"] == "done" and ae["versions"]["scipy"] is not None  # installed, only blocked
    before = ae["eval"]["interval"]
    assert before is None and ae["eval"]["interval_note"] == NO_SCIPY
    assert summary["pairs"]["0.1"]["status"] == "done" and summary["pairs"]["0.1"]["interval"] is None
    assert summary["pairs"]["0.1"]["interval_note"] == NO_SCIPY
    assert ae["tokens"]["intervals"] == {} and ae["tokens"]["intervals_note"] == NO_SCIPY
    pair_file = json.loads((tmp_path / "nugget2d-icae-r0.1.json").read_text())
    assert ae["bleu"]["low"] is None and pair_file["difference"]["low"] is None
    fill_intervals(ae)
    fill_intervals(summary)
    fill_intervals(pair_file)
    assert ae["bleu"]["low"] == ae["eval"]["interval"][0] and ae["bleu"]["interval_note"] == ""
    assert pair_file["difference"]["high"] == pair_file["pair"]["interval"][1]
    assert set(ae["tokens"]["intervals"]) == set(ae["tokens"]["units"])
    filled = ae["eval"]["interval"]
    assert filled[0] <= ae["eval"]["bleu"] <= filled[1] and ae["eval"]["interval_note"] == ""
    pair = summary["pairs"]["0.1"]
    assert pair["interval"][0] <= pair["difference"] <= pair["interval"][1]
