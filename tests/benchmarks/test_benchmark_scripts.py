"""The GPU benchmarks as ``make gpu-check`` drives them, on CPU with tiny shapes: they
import nothing of the pipeline stack (a GPU image lacks Ray / MLflow / DeepSpeed /
omegaconf), write into ``--results-dir``, report a roofline when given the peaks, stop at
``--max-seconds`` with the rest marked skipped, and run all training variants in one go."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks import nugget2d_decode, nugget2d_train_overhead, train_overhead

REPO = Path(__file__).resolve().parents[2]
BLOCKED = ("ray", "omegaconf", "mlflow", "deepspeed")
# the roofline's counting and the published model configs (`stages.costs`), plain Python
ALLOWED_STAGES = {"stages", "stages.common", "stages.common.device", "stages.costs", "stages.costs.decoder",
                  "stages.costs.known_models", "stages.costs.peaks", "stages.costs.seq2seq", "stages.costs.work"}


def run_blocked(code: str) -> str:
    """``code`` in a fresh interpreter where the pipeline stack cannot be imported."""
    block = "import sys\n" + "".join(f"sys.modules[{m!r}] = None\n" for m in BLOCKED)
    proc = subprocess.run([sys.executable, "-c", block + code], capture_output=True, text=True,
                          cwd=REPO, env={"PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1",
                                         "HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


def test_benchmarks_import_only_the_model_library():
    out = run_blocked(
        "import benchmarks.nugget2d_decode, benchmarks.nugget2d_train_overhead, benchmarks.train_overhead\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('stages', 'pipelines')))\n")
    assert set(eval(out)) <= ALLOWED_STAGES


def test_bart_shape_trains_without_the_pipeline_stack(tmp_path):
    run_blocked(
        "import runpy; sys.argv = ['train_overhead.py', '--shape', 'bart-tiny', '--source', '16', "
        f"'--steps', '2', '--batch-size', '2', '--peak-tflops', '0.01', '--results-dir', {str(tmp_path)!r}]\n"
        "runpy.run_path('benchmarks/train_overhead.py', run_name='__main__')\n")
    result = json.loads((tmp_path / "train_overhead_bart-tiny_cpu.json").read_text())
    assert result["steps_run"] == 2 and result["tokens"] == 2 * 2 * (16 + 16)
    for model in ("vanilla_hf", "nugget"):
        assert result["over_roofline"][model] == pytest.approx(
            result["step_s"][model] / result["roofline_s"][model])
    # Nugget reads 2 nuggets instead of 16 states and runs its bottom 3 layers forward only
    assert result["roofline_flops_per_step"]["nugget"] < result["roofline_flops_per_step"]["vanilla_hf"]
    assert "| nugget |" in (tmp_path / "train_overhead_bart-tiny_cpu.md").read_text()


def test_train_overhead_time_cap_writes_a_skipped_result(tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "argv", ["x", "--shape", "bart-tiny", "--source", "8", "--steps", "3",
                                      "--max-seconds", "0.001", "--results-dir", str(tmp_path)])
    train_overhead.main()
    result = json.loads((tmp_path / "train_overhead_bart-tiny_cpu.json").read_text())
    assert result["steps_run"] == 0 and "0 of 3 steps" in result["stopped_early"]
    assert (tmp_path / "train_overhead_bart-tiny_cpu.md").read_text().startswith("skipped:")


def decode(tmp_path, monkeypatch, *extra: str) -> dict:
    monkeypatch.setattr(sys, "argv", ["x", "--contexts", "48", "--steps", "2", "--base", "1", "--repeats", "1",
                                      "--skip-reference", "--results-dir", str(tmp_path), *extra])
    nugget2d_decode.main()
    return json.loads((tmp_path / "nugget2d_decode_cpu.json").read_text())


def test_decode_reports_its_roofline(tmp_path, monkeypatch):
    row = decode(tmp_path, monkeypatch, "--bandwidth-gbs", "10")["rows"][0]
    for system in ("hf_generate", "nugget2d", "full_static"):
        assert row[f"{system}_over_roofline"] == pytest.approx(row[f"{system}_ms"] / row[f"{system}_roofline_ms"])
    # 5 nuggets instead of 48 context tokens: fewer KV bytes per step
    assert row["nugget2d_roofline_ms"] < row["full_static_roofline_ms"] == row["hf_generate_roofline_ms"]
    assert "nugget2d ms per token vs hf_generate" in (tmp_path / "nugget2d_decode_cpu.md").read_text()


def test_decode_without_peaks_says_unknown_and_stops_at_the_cap(tmp_path, monkeypatch):
    out = decode(tmp_path, monkeypatch, "--max-seconds", "0.001")
    row = out["rows"][0]
    assert out["meta"]["bandwidth_gbs"] is None
    assert all("--max-seconds" in row[f"{s}_skipped"] for s in ("hf_generate", "nugget2d", "full_static"))
    assert "| nugget2d | skipped: --max-seconds" in (tmp_path / "nugget2d_decode_cpu.md").read_text()


def test_train_time_cap_stops_the_running_system(tmp_path, monkeypatch):
    # a child needs longer than 1 s to import torch and build its model: it is stopped
    monkeypatch.setattr(sys, "argv", ["x", "--doc", "16", "--prompt", "2", "--answer", "4", "--steps", "1",
                                      "--max-seconds", "1", "--results-dir", str(tmp_path)])
    nugget2d_train_overhead.main()
    out = json.loads((tmp_path / "nugget2d_train_overhead_cpu.json").read_text())
    assert "while it ran" in out["results"]["full_ft"]["skipped"]
    assert "before it started" in out["results"]["nugget2d_two_pass"]["skipped"]
    assert out["ratios"] == {}


def fake_child(system: str, checkpointing: bool, deadline) -> dict:
    """Measurements a child would report: Nugget2D 1.2x Full FT's time, checkpointing 2x."""
    scale = (1.0 if system == "full_ft" else 1.2) * (2.0 if checkpointing else 1.0)
    return {"system": system, "step_s": scale, "peak_bytes": 100 * scale, "before_steps_bytes": 0,
            "peak_above_before_bytes": 10 * scale, "trainable_params": 1, "forward_ops": 10,
            "backward_ops": 20, "saved_activation_bytes": 5}


def test_train_checkpointing_both_writes_six_rows(tmp_path, monkeypatch):
    monkeypatch.setattr(nugget2d_train_overhead, "run_child", fake_child)
    monkeypatch.setattr(sys, "argv", ["x", "--checkpointing", "both", "--peak-tflops", "1",
                                      "--results-dir", str(tmp_path)])
    nugget2d_train_overhead.main()
    out = json.loads((tmp_path / "nugget2d_train_overhead_cpu_both.json").read_text())
    assert list(out["results"]) == ["full_ft", "nugget2d", "nugget2d_two_pass", "full_ft +checkpointing",
                                    "nugget2d +checkpointing", "nugget2d_two_pass +checkpointing"]
    # each against Full FT with the same setting
    assert {k: r["step_time"] for k, r in out["ratios"].items()} == pytest.approx(
        dict.fromkeys(["nugget2d", "nugget2d_two_pass", "nugget2d +checkpointing",
                       "nugget2d_two_pass +checkpointing"], 1.2))
    r = out["results"]
    # the recomputed forward is in the checkpointed rows' roofline; two-pass recomputes the document only
    assert r["full_ft +checkpointing"]["roofline_flops"] > r["full_ft"]["roofline_flops"]
    assert (r["nugget2d"]["roofline_flops"] == r["nugget2d_two_pass"]["roofline_flops"]
            < r["nugget2d_two_pass +checkpointing"]["roofline_flops"] < r["nugget2d +checkpointing"]["roofline_flops"])
    assert r["nugget2d"]["over_roofline"] == pytest.approx(1.2 / (r["nugget2d"]["roofline_flops"] / 1e12))
    md = (tmp_path / "nugget2d_train_overhead_cpu_both.md").read_text()
    assert "nugget2d_two_pass +checkpointing / full_ft +checkpointing: step time 1.20x" in md
