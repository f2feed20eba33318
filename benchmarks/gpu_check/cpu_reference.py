"""The CPU profile's numbers for the experiments the GPU burst repeats, taken from a finished
run's report (``report/<key>/results.json``) into ``benchmarks/results/gpu/cpu_reference.json``
so docs/gpu-results.md can show them beside the GPU's without the run's artifacts.

Rows kept: Nugget figure 4's autoencoding BLEU per ratio, and Nugget2D §4's autoencoding
BLEU of Nugget2D and ICAE per ratio; each with its n, interval and flags as the report gave
them. Keys are ``<system> r=<ratio>`` (`burst_key`), the same as the burst's results.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

REFERENCE = Path(__file__).resolve().parents[1] / "results" / "gpu" / "cpu_reference.json"
AE_ROW = re.compile(r"^Nugget AE r=(?P<ratio>[0-9.]+) l=\d+ \[")
NUGGET2D_ROW = re.compile(r"^(?P<system>nugget2d|icae) r(?P<ratio>[0-9.]+)$")


def burst_key(system: str, ratio: float) -> str:
    """``nugget_ae r=0.1``, ``nugget2d r=0.1``, ``icae r=0.05``: one experiment's cell."""
    return f"{system} r={float(ratio):g}"


def key_of(row: dict) -> str | None:
    if row.get("column") != "bleu":
        return None
    if row.get("table") == "nugget_fig4" and (m := AE_ROW.match(row.get("row", ""))):
        return burst_key("nugget_ae", float(m["ratio"]))
    if row.get("table") == "nugget2d_autoencoding" and (m := NUGGET2D_ROW.match(row.get("row", ""))):
        return burst_key(m["system"], float(m["ratio"]))
    return None


def extract(results_json: Path, profile: str, commit: str, date: str) -> dict:
    rows = {}
    for row in json.loads(results_json.read_text()):
        key = key_of(row)
        if key is not None and row.get("value") is not None:
            rows[key] = {k: row.get(k) for k in ("value", "low", "high", "n", "flags")} | {"row": row["row"]}
    if not rows:
        raise SystemExit(f"cpu-reference: no Nugget fig. 4 / Nugget2D autoencoding BLEU rows in {results_json}")
    return {"profile": profile, "commit": commit, "date": date, "source": str(results_json.name), "unit": "documents",
            "rows": dict(sorted(rows.items()))}


def load(path: Path = REFERENCE) -> dict:
    return json.loads(path.read_text()) if path.is_file() else {"rows": {}}
