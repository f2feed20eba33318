"""``nugget run --dry-run --cost-device NAME [--gpus N] [--gpu-results DIR]``: the cost plan
after the plan, every stage and a total, MEASURED / ASSUMED efficiencies, and flag errors
before any work."""

from __future__ import annotations

import json
import re
import socket

import pytest

from pipelines.cli import main_full, main_stage
from stages.config import load_config
from stages.registry import DAG
from tests.extras import HARNESS_OFF


@pytest.fixture
def no_network(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError(f"the dry run opened a connection: {args}")

    monkeypatch.setattr(socket.socket, "connect", refuse)


def base(tmp_path, profile: str) -> list[str]:
    return [f"profile={profile}", f"run.artifact_root={tmp_path / 'root'}", f"run.sources_dir={tmp_path}",
            f"run.tracking_uri=sqlite:///{tmp_path / 'mlflow.db'}", *HARNESS_OFF]


def cost_rows(out: str) -> dict[str, str]:
    """Stage name -> its row of the cost table."""
    table = out.split("cost plan on ", 1)[1].split("\ntotal (", 1)[0]
    return {m.group(1): m.group(0) for m in re.finditer(r"^  ([a-z0-9_]+) +(train|eval|cpu|-) .*$", table, re.M)}


@pytest.mark.parametrize("profile, gpus", [("tiny", 1), ("paper", 64)])
def test_dry_run_costs_every_stage_and_totals(tmp_path, capsys, monkeypatch, no_network, profile, gpus):
    monkeypatch.setenv("NUGGET_CLUSTER_RESOURCES", '{"CPU": 64, "GPU": 64}')
    args = base(tmp_path, profile)
    code = main_full(["--dry-run", "--cost-device", "h100", "--gpus", str(gpus),
                      "--gpu-results", str(tmp_path / "no-checks"), *args])
    out = capsys.readouterr().out
    assert code in (0, 3)  # 3: paper's hub datasets and models are not here; the cost needs none of them
    stages = DAG.for_config(load_config(args)).order
    rows = cost_rows(out)
    assert list(rows) == stages
    assert re.search(rf"^total \({len(stages)} stages\): [\d,.e-]+ GPU-hours of H100 80GB HBM3; wall-clock on "
                     rf"{gpus}: [\d,.e-]+ h", out, re.M)
    assert "train_flops_share = 0.20 ASSUMED" in out and "decode_bandwidth_share = 0.40 ASSUMED" in out
    assert "not estimated (left out of the total): " in out
    assert rows["report"].split()[1] == "cpu" and rows["train_nugget2d"].split()[1] == "train"
    assert not (tmp_path / "root").exists()  # a dry run writes nothing


def test_paper_on_64_gpus_spreads_training_and_says_what_cannot(tmp_path, capsys, monkeypatch, no_network):
    monkeypatch.setenv("NUGGET_CLUSTER_RESOURCES", '{"CPU": 64, "GPU": 64}')
    main_full(["--dry-run", "--cost-device", "h100", "--gpus", "64", *base(tmp_path, "paper")])
    out = capsys.readouterr().out
    rows = cost_rows(out)
    # 16 workers x batch 1 x 2 accumulation steps = 32 examples per step: no more than 32 devices
    assert rows["train_nugget2d"].split()[5] == "32"
    assert "uses 32 of the GPUs given: at most 32" in out
    assert rows["eval_qa"].split()[5] == "1" and "runs on one device" in out
    assert "eval_harness" in out.split("not estimated (left out of the total): ", 1)[1].splitlines()[0]


def test_measured_efficiency_is_labelled_with_its_file(tmp_path, capsys, monkeypatch):
    checks = tmp_path / "gpu"
    (checks / "2026-12-01").mkdir(parents=True)
    (checks / "2026-12-01" / "efficiency.json").write_text(json.dumps({
        "date": "2026-12-01", "commit": "0123456789abcdef", "device": "NVIDIA H100 80GB HBM3",
        "train_flops_share": 0.31, "decode_bandwidth_share": None,
        "n": {"train_flops_share": 20}, "source": {"train_flops_share": "headline ae fit"}}))
    monkeypatch.setenv("NUGGET_GPU_RESULTS", str(checks))  # the env var; the flag is tested above
    main_stage(["train_nugget", "--dry-run", "--cost-device", "h100", *base(tmp_path, "tiny")])
    out = capsys.readouterr().out
    text = " ".join(out.split())  # the figures' bases are wrapped
    assert "train_flops_share = 0.31 MEASURED: " in text and "2026-12-01/efficiency.json" in text
    assert "commit 0123456789ab" in text and "n=20, headline ae fit" in text
    assert "decode_bandwidth_share = 0.40 ASSUMED" in out
    assert list(cost_rows(out)) == ["train_nugget"]  # nugget stage: the stage alone


@pytest.mark.parametrize("argv, message", [
    (["--dry-run", "--cost-device", "v100"], "unknown device 'v100'; known: h100, h200, a100, a100-pcie"),
    (["--cost-device", "h100"], "--cost-device goes with --dry-run"),
    (["--dry-run", "--gpus", "8"], "--gpus goes with --cost-device"),
    (["--dry-run", "--cost-device", "h100", "--gpus", "0"], "--gpus 0: must be >= 1"),
])
def test_bad_cost_flags_stop_before_any_work(argv, message, capsys, monkeypatch):
    def no_config(*args, **kwargs):
        raise AssertionError("the config was loaded")

    monkeypatch.setattr("pipelines.cli.load_config", no_config)
    assert main_full(argv) == 2
    assert message in capsys.readouterr().err


def test_unreadable_efficiency_file_is_exit_2(tmp_path, capsys):
    (tmp_path / "gpu" / "2026-12-01").mkdir(parents=True)
    (tmp_path / "gpu" / "2026-12-01" / "efficiency.json").write_text("[")
    code = main_full(["--dry-run", "--cost-device", "h100", "--gpu-results", str(tmp_path / "gpu"),
                      *base(tmp_path, "tiny")])
    assert code == 2 and "cannot read the GPU check's efficiency" in capsys.readouterr().err
