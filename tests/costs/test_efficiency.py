"""`stages.costs.efficiency`: a figure a GPU check measured on the device is MEASURED (file,
date, commit, n, source), the newest such file wins per figure, and anything else (no file,
a null, another device) is the ASSUMED default, saying so; a broken file is an error."""

from __future__ import annotations

import json

import pytest

from stages.costs.efficiency import (
    ASSUMED,
    DECODE,
    RESULTS_ENV,
    TRAIN,
    EfficiencyError,
    results_dir,
    shares,
)

H100 = "H100 80GB HBM3"


def window(root, date: str, **fields) -> None:
    content = {"date": date, "commit": "abcdef1234567890", "device": "NVIDIA H100 80GB HBM3",
               "train_flops_share": None, "decode_bandwidth_share": None,
               "n": {"train_flops_share": 12, "decode_bandwidth_share": 48},
               "source": {"train_flops_share": "headline ae fit, 12 steps", "decode_bandwidth_share": "decode bench"}}
    content.update(fields)
    (root / date).mkdir(parents=True)
    (root / date / "efficiency.json").write_text(json.dumps(content))


def test_no_window_means_every_figure_assumed(tmp_path):
    found = shares(H100, tmp_path / "absent")
    assert {s.value for s in found.values()} == {ASSUMED[TRAIN][0], ASSUMED[DECODE][0]}
    assert all(not s.measured and s.label == "ASSUMED" and "no efficiency.json" in s.line() for s in found.values())


def test_measured_figure_is_labelled_with_file_date_commit(tmp_path):
    window(tmp_path, "2026-12-01", train_flops_share=0.31)
    found = shares(H100, tmp_path)
    train, decode = found[TRAIN], found[DECODE]
    assert train.measured and train.value == 0.31 and train.label == "MEASURED"
    assert "2026-12-01/efficiency.json" in train.basis and "commit abcdef123456" in train.basis
    assert "n=12" in train.basis and "headline ae fit" in train.basis
    assert not decode.measured and decode.value == ASSUMED[DECODE][0]  # null in the file: the default


def test_newest_window_wins_per_figure(tmp_path):
    window(tmp_path, "2026-11-01", train_flops_share=0.25, decode_bandwidth_share=0.5)
    window(tmp_path, "2026-12-01", train_flops_share=0.31)
    found = shares(H100, tmp_path)
    assert found[TRAIN].value == 0.31 and "2026-12-01" in found[TRAIN].basis
    assert found[DECODE].value == 0.5 and "2026-11-01" in found[DECODE].basis  # the newer one measured none


def test_another_devices_window_is_passed_over_and_named(tmp_path):
    window(tmp_path, "2026-12-01", device="NVIDIA H200", train_flops_share=0.4)
    assert shares("H200", tmp_path)[TRAIN].measured
    h100 = shares(H100, tmp_path)[TRAIN]
    assert not h100.measured and "'NVIDIA H200'" in h100.basis


@pytest.mark.parametrize("value", [0, 1.5, "0.3", True])
def test_a_share_outside_0_1_is_an_error_naming_the_file(tmp_path, value):
    window(tmp_path, "2026-12-01", train_flops_share=value)
    with pytest.raises(EfficiencyError, match="2026-12-01/efficiency.json: train_flops_share"):
        shares(H100, tmp_path)


def test_unreadable_file_is_an_error(tmp_path):
    (tmp_path / "2026-12-01").mkdir()
    (tmp_path / "2026-12-01" / "efficiency.json").write_text("{not json")
    with pytest.raises(EfficiencyError, match="cannot read"):
        shares(H100, tmp_path)


def test_results_folder_from_flag_then_env(tmp_path, monkeypatch):
    monkeypatch.setenv(RESULTS_ENV, str(tmp_path / "env"))
    assert results_dir() == tmp_path / "env"
    assert results_dir(str(tmp_path / "flag")) == tmp_path / "flag"
    monkeypatch.delenv(RESULTS_ENV)
    assert results_dir().parts[-3:] == ("benchmarks", "results", "gpu")
