"""The headline burst's numbers as one window returned them: one cell per experiment
(`burst_cells`, keyed like `cpu_reference.burst_key`) and the papers' numbers beside them.

The burst (`benchmarks.headline`) writes one JSON per trained system as it finishes
(``ae-r0.1.json``, ...) and a summary per experiment at the end; this reads them wherever a
call's folder holds them, so a call cut short still shows what finished.
"""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.gpu_check.cpu_reference import burst_key
from stages.common.floors import RECONSTRUCTION_BLEU

# the papers' own statements (their wording in docs/gpu-results.md)
PAPER = {
    "nugget_ae r=0.1": "> 99 for r ≥ 0.1 (Nugget §5.1, fig. 4: mBART-50, WMT19 en)",
    "nugget_ae r=0.25": "> 99 for r ≥ 0.1 (Nugget §5.1)",
    "nugget_ae r=0.05": "below r = 0.1's: the curve saturates at r = 0.1 (fig. 4)",
    "nugget2d r=0.05": "98 at 20x (Nugget2D abstract: LLaMA-7B, the Pile)",
    "nugget2d r=0.1": "fig. 5 only, no number in the text (LLaMA-7B, the Pile)",
    "icae r=0.1": "ICAE's own §3.3.1 (Nugget2D fig. 5: comparable on short, worse on long texts)",
    "nugget2d-icae r=0.1": "≥ 0: 'comparable or better' (Nugget2D §4.2)",
}


def _load(path: Path) -> dict:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _interval(result: dict, name: str) -> dict:
    """{value, low, high, n} of a statistic written flat (``bleu``, ``bleu_low``...) or nested."""
    value = result.get(name)
    if isinstance(value, dict):
        flags = value.get("flags")
        return {"value": value.get("value"), "low": value.get("low"), "high": value.get("high"),
                "n": value.get("n", result.get("n_documents")),
                "flags": "; ".join(flags) if isinstance(flags, list) else flags}
    return {"value": value, "low": result.get(f"{name}_low"), "high": result.get(f"{name}_high"),
            "n": result.get("n_documents"), "flags": result.get("flags")}


WINDOW_FILES = "call*/headline-*/*.json"  # under a window's folder; a call's own: "headline-*/*.json"


def below_floor(cell: dict) -> dict:
    """The cell, flagged when its BLEU is not above the report's competence floor for
    reconstruction (`stages.common.floors.RECONSTRUCTION_BLEU`): such a model does not do the
    task, and a comparison standing on it is no result (docs/report.md)."""
    value = cell.get("value")
    if value is not None and value <= RECONSTRUCTION_BLEU:
        note = f"not above BLEU {RECONSTRUCTION_BLEU:g}, the competence floor: it does not reconstruct its input"
        cell = {**cell, "flags": "; ".join(f for f in (cell.get("flags"), note) if f)}
    return cell


def burst_cells(folder: Path, pattern: str = WINDOW_FILES) -> dict[str, dict]:
    """{experiment key: cell} of every burst result under ``folder`` (a window's, or a call's
    with ``pattern="headline-*/*.json"``)."""
    cells: dict[str, dict] = {}
    for path in sorted(folder.glob(pattern)):
        result = _load(path)
        if result.get("status", "done") != "done":
            continue
        if "system" in result and "ratio" in result and "bleu" in result:
            cells[burst_key(result["system"], result["ratio"])] = below_floor(_interval(result, "bleu"))
        if "difference" in result and "ratio" in result:
            cells[burst_key("nugget2d-icae", result["ratio"])] = _interval(result, "difference")
    for key, cell in cells.items():  # a difference standing on a system below the floor is no result
        system, ratio = key.split(" ", 1)
        below = [s for s in system.split("-") if len(system.split("-")) == 2
                 and "competence floor" in str(cells.get(f"{s} {ratio}", {}).get("flags") or "")]
        if below:
            note = f"{' and '.join(below)} below the competence floor: the difference is no result"
            cells[key] = {**cell, "flags": "; ".join(f for f in (cell.get("flags"), note) if f)}
    return cells
