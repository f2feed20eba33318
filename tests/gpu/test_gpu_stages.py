"""Evaluation and calibration stages on a GPU (``ctx.device="cuda:0"``) give the CPU run's
results on the same tiny artifacts: quality numbers within float tolerance (timings aside).
With ``device=cpu`` the same stages run a second time on the CPU, under the device guard."""

from __future__ import annotations

import pytest

from stages.artifacts.evaluate import EvalTable
from stages.nugget.eval_reconstruction import EvalReconstruction
from stages.nugget.eval_similarity import EvalSimilarity
from stages.nugget2d.artifacts import CalibratedThreshold
from stages.nugget2d.calibrate_threshold import CalibrateThreshold
from stages.nugget2d.eval_lm import EvalLM
from stages.nugget2d.eval_qa import EvalQA
from stages.nugget2d.eval_summarization import EvalSummarization
from tests.evaluation.fixtures import SMALL, artifact, context, make_eval_inputs
from tests.lm_eval.test_stages import ARGS, _published

pytestmark = [pytest.mark.ray, pytest.mark.slow]
TIMING = ("ms_per_token", "encode_ms", "ms")  # wall-clock columns differ by design


def _place(device: str) -> str:
    return "cuda:0" if device == "cuda" else device


def _on(device: str, stage_cls, inputs, out, overrides):
    ctx = context(stage_cls, inputs, out, overrides)
    ctx.device = device
    stage_cls().run(ctx)
    return ctx


def _quality(table: EvalTable) -> dict[str, dict[str, float]]:
    return {r.system: {k: float(v) for k, v in r.metrics.items() if not any(t in k for t in TIMING)}
            for r in table.rows}


def _lm_inputs(root, stage_cls) -> dict:
    return {u: artifact(u, _published(root, u)) for u in stage_cls.upstream}


def test_calibration_on_gpu_matches_cpu(pipeline_run, tmp_path, device):
    root, out = pipeline_run
    _on(_place(device), CalibrateThreshold, _lm_inputs(root, CalibrateThreshold), tmp_path / "gpu", ARGS)
    gpu, cpu = CalibratedThreshold.read(tmp_path / "gpu"), CalibratedThreshold.read(out["calibrate_threshold"])
    assert gpu.threshold == pytest.approx(cpu.threshold, abs=1e-4)
    assert gpu.metrics["sample_ratio"] == pytest.approx(cpu.metrics["sample_ratio"], abs=0.02)


@pytest.mark.parametrize("stage_cls", [EvalLM, EvalQA, EvalSummarization])
def test_nugget2d_evaluations_on_gpu_match_cpu(pipeline_run, tmp_path, stage_cls, device):
    root, out = pipeline_run
    _on(_place(device), stage_cls, _lm_inputs(root, stage_cls), tmp_path / "gpu", ARGS)
    gpu, cpu = _quality(EvalTable.read(tmp_path / "gpu")), _quality(EvalTable.read(out[stage_cls.name]))
    assert gpu.keys() == cpu.keys()
    for system, metrics in cpu.items():
        for name, value in metrics.items():
            if name.endswith("ppl"):
                assert gpu[system][name] == pytest.approx(value, rel=1e-3), (system, name)
            else:  # accuracy / ROUGE / cost counts of greedy outputs: identical tokens expected in fp32
                assert gpu[system][name] == pytest.approx(value, rel=1e-6, abs=1e-6), (system, name)


@pytest.mark.parametrize("stage_cls", [EvalSimilarity, EvalReconstruction])
def test_nugget_evaluations_on_gpu_match_cpu(tmp_path, stage_cls, device):
    inputs = make_eval_inputs(tmp_path / "inputs")
    cpu = _on("cpu", stage_cls, inputs, tmp_path / "cpu", SMALL)
    gpu = _on(_place(device), stage_cls, inputs, tmp_path / "gpu", SMALL)
    scored = {k: v for k, v in cpu.metrics.items() if "seconds" not in k}
    assert scored and all(k in gpu.metrics for k in scored)
    for name, value in scored.items():
        assert gpu.metrics[name] == pytest.approx(value, rel=1e-3, abs=1e-3), name
