"""What a window measured becomes the cost plan's efficiency (efficiency.json), which the
dry run's cost plan then reads as MEASURED."""

from __future__ import annotations

import json

from benchmarks.gpu_check.collect import write_efficiency


def window(tmp_path, device: str | None = "NVIDIA H100 80GB HBM3"):
    root = tmp_path / "2026-12-02"
    (root / "call1" / "gpu-info").mkdir(parents=True)
    (root / "call1" / "gpu-info" / "env.json").write_text(json.dumps({"device_name": device, "commit": "abc123"}))
    (root / "call2" / "train-7b").mkdir(parents=True)
    (root / "call2" / "train-7b" / "nugget2d_train_overhead_cuda.json").write_text(json.dumps({"results": {
        "full_ft": {"over_roofline": 2.0}, "nugget2d": {"over_roofline": 4.0}}}))
    (root / "call2" / "decode").mkdir(parents=True)
    (root / "call2" / "decode" / "nugget2d_decode_cuda.json").write_text(json.dumps({"rows": [
        {"nugget2d_over_roofline": 2.0, "full_static_over_roofline": 1.25}, {"nugget2d_over_roofline": None}]}))
    return root


def test_the_shares_are_roofline_over_measured_with_n_and_source(tmp_path):
    data = json.loads(write_efficiency(window(tmp_path)).read_text())
    assert data["device"] == "NVIDIA H100 80GB HBM3" and data["commit"] == "abc123" and data["date"] == "2026-12-02"
    assert data["train_flops_share"] == 0.25 and data["n"]["train_flops_share"] == 1  # Nugget2D's step only
    assert data["decode_bandwidth_share"] == (0.5 + 0.8) / 2 and data["n"]["decode_bandwidth_share"] == 2
    assert "train-7b" in data["source"]["train_flops_share"] and "decode" in data["source"]["decode_bandwidth_share"]


def test_no_file_without_a_device_name_or_a_measurement(tmp_path):
    assert write_efficiency(window(tmp_path / "a", device=None)) is None
    empty = tmp_path / "b" / "2026-12-03"
    (empty / "call1" / "gpu-info").mkdir(parents=True)
    (empty / "call1" / "gpu-info" / "env.json").write_text(json.dumps({"device_name": "NVIDIA H100 80GB HBM3"}))
    assert write_efficiency(empty) is None and not (empty / "efficiency.json").exists()


def test_the_cost_plan_reads_it_as_measured(tmp_path):
    from stages.costs.efficiency import DECODE, TRAIN, shares
    from stages.costs.peaks import table_entry

    write_efficiency(window(tmp_path))
    found = shares(table_entry("NVIDIA H100 80GB HBM3"), tmp_path)
    assert found[TRAIN].value == 0.25 and found[DECODE].value == 0.65
    assert all(s.measured and "2026-12-02" in s.basis and "abc123" in s.basis for s in found.values())
