"""docs/gpu-results.md from a window's returned burst results: the newest number per
experiment beside the paper's and the CPU profile's, models below the floor named."""

from __future__ import annotations

import json

from benchmarks.gpu_check.headline import burst_cells
from benchmarks.gpu_check.page import render


def result(folder, name: str, **fields) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(json.dumps({"schema": "nugget-headline-result/1", "status": "done", **fields}))


def bleu(value: float, low: float, high: float, n: int = 300) -> dict:
    return {"value": value, "low": low, "high": high, "n": n, "flags": [], "interval_note": ""}


def window(root, date: str, ae_r01: float):
    w = root / date
    (w / "call1" / "gpu-info").mkdir(parents=True)
    (w / "call1" / "gpu-info" / "env.json").write_text(json.dumps({"device_name": "NVIDIA H100 80GB HBM3",
                                                                   "commit": "0123456789abcdef"}))
    (w / "summary.md").write_text("# GPU check\n")
    (w / "call1" / "status.json").write_text(json.dumps({"call": 1, "parts": [{"part": "headline-ae", "status": "ok"}]}))
    result(w / "call1" / "headline-ae", "ae-r0.1.json", system="nugget_ae", ratio=0.1,
           bleu=bleu(ae_r01, ae_r01 - 2, ae_r01 + 2))
    result(w / "call1" / "headline-ae", "ae-r0.05.json", system="nugget_ae", ratio=0.05, status="not run: no time")
    result(w / "call2" / "headline-2d", "nugget2d-r0.1.json", system="nugget2d", ratio=0.1, bleu=bleu(55.0, 52, 58))
    result(w / "call2" / "headline-2d", "icae-r0.1.json", system="icae", ratio=0.1, bleu=bleu(4.0, 3, 5))
    result(w / "call2" / "headline-2d", "nugget2d-icae-r0.1.json", system="nugget2d-icae", ratio=0.1,
           difference=bleu(51.0, 47, 55))
    return w


def test_cells_name_models_below_the_floor_and_the_differences_standing_on_them(tmp_path):
    cells = burst_cells(window(tmp_path, "2026-12-01", 42.0))
    assert cells["nugget_ae r=0.1"]["value"] == 42.0 and not cells["nugget_ae r=0.1"]["flags"]
    assert "nugget_ae r=0.05" not in cells  # not run: no cell
    assert "competence floor" in cells["icae r=0.1"]["flags"] and not cells["nugget2d r=0.1"]["flags"]
    assert "icae below the competence floor" in cells["nugget2d-icae r=0.1"]["flags"]


def test_the_page_shows_the_newest_window_beside_the_paper_and_the_cpu_profile(tmp_path):
    window(tmp_path, "2026-12-01", 42.0)
    window(tmp_path, "2026-12-05", 61.5)
    page = render(tmp_path)
    row = next(line for line in page.splitlines() if line.startswith("| Nugget AE BLEU, r = 0.1 |"))
    assert "61.50 [59.50, 63.50] (n=300)" in row and "2026-12-05, 0123456789ab, NVIDIA H100 80GB HBM3" in row
    assert "> 99" in row and "1.00 [0.44, 1.80] (n=100)" in row  # the paper's and profile=small's
    assert "never run" in next(line for line in page.splitlines() if line.startswith("| Nugget AE BLEU, r = 0.05 |"))
    assert "newest window: 2026-12-05" in page
