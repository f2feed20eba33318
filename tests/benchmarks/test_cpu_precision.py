"""benchmarks/cpu_precision.py at --quick sizes: every row in both precisions (training in
all three modes), the ratios, and the results file named for the CPU's bf16 instructions."""

from __future__ import annotations

import json
import sys

import pytest

from benchmarks import cpu_precision
from stages.config.precision import BF16_FLAGS, read_cpu_flags
from tests.torch_threads import one_thread  # noqa: F401  (autouse: main() sets the thread count; restored after)


def test_quick_run_writes_every_row(tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "argv", ["x", "--quick", "--repeats", "1", "--threads", "1",
                                      "--results-dir", str(tmp_path)])
    cpu_precision.main()
    tag = "_".join(f for f in BF16_FLAGS if f in (read_cpu_flags() or ())) or "no-bf16"
    result = json.loads((tmp_path / f"cpu_precision_{tag}_quick.json").read_text())
    rows = {r["row"]: r for r in result["rows"]}
    assert set(rows) == {"linear", "matmul", "grad_input", "lm_forward", "lm_generate", "nugget2d_train",
                         "nugget_train"}
    for name in ("nugget2d_train", "nugget_train"):
        assert set(rows[name]["speed"]) == {"fp32", "autocast", "bf16"}
    for r in rows.values():
        assert r["ratio_to_fp32"]["bf16"] == pytest.approx(r["speed"]["bf16"] / r["speed"]["fp32"])
        assert all(v > 0 for v in r["speed"].values())
    assert abs(rows["lm_forward"]["nll_shift_bf16"]) < 0.1  # bf16 rounding, not another model
    assert "| nugget2d_train | tokens/s |" in (tmp_path / f"cpu_precision_{tag}_quick.md").read_text()
