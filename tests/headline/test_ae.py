"""``ae`` at a micro size: each ratio's JSON is written as soon as that ratio is trained and
again when it is scored, a ratio that cannot finish in the budget is recorded, not started,
and a scored result carries its interval, per-document statistics and the paper's number."""

from __future__ import annotations

import json

import pytest

from benchmarks.headline import ae as ae_module
from benchmarks.headline.ae import AERun
from benchmarks.headline.budget import NO_TIME, Deadline
from benchmarks.headline.environment import run_device
from benchmarks.headline.records import DONE, SCORING
from tests.headline.micro import AE


class ScriptedDeadline(Deadline):
    """Time for the first ``ratios`` ratios only."""

    def __init__(self, ratios: int) -> None:
        super().__init__(None)
        self.answers = iter([True] * ratios + [False] * 10)

    def allows(self, estimate: float) -> bool:
        return next(self.answers)


@pytest.fixture(scope="module")
def ae_run(tiny_data, tmp_path_factory):
    folder, _ = tiny_data
    out = tmp_path_factory.mktemp("ae")
    writes: list[tuple[str, str]] = []
    real = ae_module.write_json

    def spy(path, data):
        writes.append((path.name, data.get("status", "")))
        real(path, data)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(ae_module, "write_json", spy)
        summary = AERun(folder, out, AE, run_device("cpu"), ScriptedDeadline(2), seed=0, size="cpu").run_all()
    return out, summary, writes


def test_each_ratio_is_written_when_trained_and_when_scored(ae_run):
    _, _, writes = ae_run
    assert writes[:3] == [("ae-r0.1.json", SCORING), ("ae-r0.1.json", DONE), ("ae.json", "")]
    assert writes[3:6] == [("ae-r0.05.json", SCORING), ("ae-r0.05.json", DONE), ("ae.json", "")]
    assert writes[6:] == [("ae-r0.25.json", NO_TIME), ("ae.json", "")]


def test_a_ratio_without_time_is_recorded_not_run(ae_run):
    out, summary, _ = ae_run
    last = json.loads((out / "ae-r0.25.json").read_text())
    assert last["status"] == NO_TIME and "train" not in last and "estimate" in last["budget"]
    assert summary["ratios"]["0.25"]["status"] == NO_TIME and summary["ratios"]["0.25"]["bleu"] is None
    assert [r for r, s in summary["ratios"].items() if s["status"] == DONE] == ["0.1", "0.05"]


def test_a_scored_ratio_has_bleu_interval_statistics_and_reference(ae_run):
    out, summary, _ = ae_run
    r = json.loads((out / "ae-r0.1.json").read_text())
    assert r["experiment"] == "nugget_autoencoding" and r["system"] == "nugget_ae" and r["ratio"] == 0.1
    assert r["device"] == "cpu" and r["versions"]["torch"] and "dtype" in r
    assert r["recipe"]["preset"]["ratios"] == [0.1, 0.05, 0.25] and r["recipe"]["why"]
    ev = r["eval"]
    assert ev["n_documents"] == 20 and len(ev["per_document"]["ids"]) == 20
    assert ev["bleu"] == pytest.approx(ev["bleu_sacrebleu"], abs=1e-6)
    low, high = ev["interval"]
    assert low <= ev["bleu"] <= high
    assert r["bleu"] == {"value": ev["bleu"], "low": low, "high": high, "n": 20, "flags": r["bleu"]["flags"],
                         "interval_note": ""}
    assert r["train"]["steps"] == 3 and r["train"]["stopped_by"] == "steps" and r["train"]["curve"]
    assert r["train"]["model_flops_per_s_estimate"] > 0
    assert "99" in r["reference"]["value"] and "§5.1" in r["reference"]["source"]
    assert summary["ratios"]["0.1"]["bleu"] == ev["bleu"]
    assert summary["train_seconds_per_ratio"]["seconds"] == AE.loop.seconds  # no --max-seconds: the preset's
    # fig. 5 on the r = 0.1 model only: shares over the same test documents, BOS / EOS counted
    tokens = r["tokens"]
    assert tokens["n_docs"] == 20 and tokens["n_nuggets"] > 0 and len(tokens["top"]) <= 6
    assert tokens["reference"]["value"]["the_share_text"] == 5.2
    assert "tokens" not in json.loads((out / "ae-r0.05.json").read_text())
