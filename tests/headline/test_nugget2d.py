"""``nugget2d`` at a micro size (a random 2-layer LLaMA in an HF folder): both systems'
results, ICAE trained on as many steps as Nugget2D, and the paired difference over the same
documents in the summary."""

from __future__ import annotations

import json
import math

import pytest

from benchmarks.headline.budget import Deadline
from benchmarks.headline.environment import run_device
from benchmarks.headline.nugget2d import Nugget2DRun
from benchmarks.headline.records import DONE
from tests.headline.micro import N2D


@pytest.fixture(scope="module")
def pair_run(tiny_data, tiny_lm, tmp_path_factory):
    folder, _ = tiny_data
    out = tmp_path_factory.mktemp("n2d")
    summary = Nugget2DRun(folder, out, N2D, run_device("cpu"), Deadline(None), seed=0, size="cpu").run_all(
        None, str(tiny_lm))
    return out, summary


def test_both_systems_are_scored_on_the_same_documents_after_the_same_steps(pair_run, tiny_data):
    out, _ = pair_run
    lengths = [len(d[:16]) for d in tiny_data[1].splits["test"].docs()]
    a = json.loads((out / "nugget2d-r0.1.json").read_text())
    b = json.loads((out / "icae-r0.1.json").read_text())
    assert a["status"] == b["status"] == DONE
    assert (a["system"], b["system"]) == ("nugget2d", "icae")
    assert a["train"]["steps"] == b["train"]["steps"] == 3
    assert b["train"]["matched_steps"] == {"target": 3, "reached": True}
    assert a["eval"]["per_document"]["ids"] == b["eval"]["per_document"]["ids"]
    assert b["eval"]["states_mean"] == 2  # ceil(0.1 x 16) slots for every document
    assert a["eval"]["states_mean"] == pytest.approx(sum(math.ceil(0.1 * n) for n in lengths) / 20)
    assert a["lm"]["source"].startswith("HF folder") and a["lm"]["layers"] == 2
    assert a["reference"]["note"] and b["reference"]["note"]


def test_the_summary_pairs_them_with_the_paired_interval(pair_run):
    out, summary = pair_run
    assert json.loads((out / "nugget2d.json").read_text()) == json.loads(json.dumps(summary))
    pair = summary["pairs"]["0.1"]
    assert pair["status"] == DONE and pair["paired"] and pair["n_documents"] == 20
    assert pair["difference"] == pytest.approx(pair["bleu"]["nugget2d"] - pair["bleu"]["icae"])
    low, high = pair["interval"]
    assert low <= pair["difference"] <= high
    assert pair["a"]["system"] == "nugget2d" and len(pair["b"]["per_document"]["stats"]) == 20
    assert summary["lm"]["load_seconds"] >= 0 and set(summary["systems"]) == {"nugget2d-r0.1", "icae-r0.1"}
    # the pair's own file: its top-level cell, as the GPU check's summary reads it
    pair_file = json.loads((out / "nugget2d-icae-r0.1.json").read_text())
    assert pair_file["status"] == DONE and pair_file["system"] == "nugget2d-icae" and pair_file["ratio"] == 0.1
    assert pair_file["difference"]["value"] == pair["difference"] and pair_file["difference"]["n"] == 20
    assert [pair_file["difference"]["low"], pair_file["difference"]["high"]] == pair["interval"]
    assert "bleu" not in pair_file and pair_file["reference"]["source"].startswith("Nugget2D")
