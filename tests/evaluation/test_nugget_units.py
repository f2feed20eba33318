"""The Nugget evaluations' units, floors and input-use checks: every interval resamples the
independent unit (documents for BLEU and for fig. 5's shares, queries for MRR), every number keeps its
per-unit statistics with ids shared by every system scored on the same units, each output holds its
floors computed on the same examples, and each system carries its model's input-use check."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import replace
from types import SimpleNamespace

import pyarrow.parquet as pq
import pytest

from stages.artifacts.base import ContractError
from stages.artifacts.trainer_state import InputUse
from stages.common.floors import Floor, random_mrr
from stages.common.intervals import share_interval
from stages.common.resampling import UnitSample, difference
from stages.corpora.nugget_data import Task
from stages.evaluation.analysis import TokenStats
from stages.evaluation.metrics import bleu_tokenizer
from stages.evaluation.task_floors import reconstruction_floor
from stages.nugget.artifacts.models import NuggetSweep, TrainedBaselines, TrainedNugget
from stages.nugget.artifacts.results import (
    NuggetAnalysis,
    ReconstructionResults,
    SimilarityResults,
    units_of,
)
from stages.nugget.eval_reconstruction import EvalReconstruction
from stages.nugget.similarity import mrr_floor, query_units
from stages.nugget.systems import collect_systems, ignoring_input, training_summaries
from tests.evaluation.fixtures import context, make_eval_inputs

# what the training loop's input-use check records of a model whose dev loss does not rise with another
# example's input (the tiny sweep's AE at r = 0.1: 6.691 either way)
IGNORES = InputUse(own=6.691, other=6.692, low=-0.004, high=0.006, n=64)


def with_input_use(monkeypatch, contract: type, model: str, use: InputUse) -> None:
    """``contract``'s ``training()`` gives ``model``'s summary the input-use check ``use`` (the training
    loop's check is another helper's; its summaries have ``input_use`` None until it lands)."""
    original = contract.training

    def training(self):
        return [replace(s, input_use=use) if s.model == model else s for s in original(self)]

    monkeypatch.setattr(contract, "training", training)


def same(a: UnitSample | None, b: UnitSample) -> bool:
    """Whether ``a`` is the sample ``b`` (its arrays compared element-wise)."""
    return a is not None and (a.unit, a.statistic, a.ids) == (b.unit, b.statistic, b.ids) and (a.stats == b.stats).all()


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    import torch

    torch.set_num_threads(1)
    return make_eval_inputs(tmp_path_factory.mktemp("units"), n_dev=20)  # MIN_UNITS documents: intervals


def test_reconstruction_resamples_documents_shared_by_every_system(inputs, tmp_path, monkeypatch):
    """20 documents decoded by every system (each decodes its input: AE at BLEU 100, MT far below its floor):
    per system the documents' BLEU statistics under build_mt_docs' doc ids, one interval over them, the
    floors of the AE and the MT references on the same documents, and train_nugget's input-use check."""
    from stages.nugget.encoders import LoadedSystem

    monkeypatch.setattr(LoadedSystem, "decode", lambda self, texts, *args: list(texts))
    with_input_use(monkeypatch, TrainedNugget, "train_nugget", IGNORES)
    ctx = context(EvalReconstruction, inputs, tmp_path / "out", ["eval.max_examples=20"])
    EvalReconstruction().run(ctx)
    out = ReconstructionResults.read(ctx.output_dir)
    dev = pq.read_table(inputs["build_mt_docs"].path / "dev.parquet").to_pydict()
    samples = {r["name"]: units_of(r)["bleu"] for r in out.rows}
    assert {s.ids for s in samples.values()} == {tuple(dev["doc_id"][:20])} and {s.unit for s in samples.values()} == {"document"}
    for r in out.rows:
        u = samples[r["name"]]
        assert u.n == r["n_docs"] == 20 and u.value() == pytest.approx(r["bleu"])
        assert (r["bleu_low"], r["bleu_high"]) == u.interval()  # 20 documents: an interval (MIN_UNITS)
        key = f"bleu.{r['name'].replace(':', '_')}"
        assert [ctx.logger.metrics[key + end] for end in ("_low", "", "_high", "_n")] == [
            r["bleu_low"], r["bleu"], r["bleu_high"], 20]
    # one system against another on the same documents: a paired comparison
    diff = difference(samples["sweep:ae-r0.1-l1"], samples["sweep:mt-r0.1-l1"])
    assert diff is not None and diff.paired and diff.n == 20
    # the floors: each objective's references, the 20 documents scored
    for objective, refs in (("ae", dev["source"][:20]), ("mt", dev["target"][:20])):
        assert out.floors[objective] == reconstruction_floor(refs, bleu_tokenizer(refs))
        assert ctx.logger.metrics[f"bleu_floor.{objective}"] == out.floors[objective].value
        assert ctx.logger.metrics[f"bleu_floor.{objective}_n"] == 20
    reached = {r["name"]: out.floor(r).reached_by(r["bleu"]) for r in out.rows}
    assert reached["sweep:ae-r0.1-l1"] and not reached["sweep:mt-r0.1-l1"]
    # the input-use check of each system's own model, and of no other
    assert {r["name"]: r["ignores_input"] for r in out.rows if r["ignores_input"]} == {"train_nugget": IGNORES.reason()}
    # the report's fig. 4 cells carry all of it
    from stages.report.nugget_tables import bleu_table

    values = {v.label: v for _, _, v in bleu_table(out, "ctx", layer=1).numbers}
    for r in out.rows:
        v = values[r["label"]]
        assert same(v.units, samples[r["name"]]) and v.floor == out.floors[r["objective"]] and v.n == 20
        assert v.bounds == (r["bleu_low"], r["bleu_high"]) and v.ignores_input == r["ignores_input"]
    assert values[out.record("train_nugget")["label"]].below_floor == IGNORES.reason()
    assert "not beyond the floor" in values[out.record("sweep:mt-r0.1-l1")["label"]].below_floor
    assert values[out.record("sweep:ae-r0.1-l1")["label"]].below_floor == ""


def test_every_system_gets_its_own_models_input_use(inputs):
    """The training summaries map to systems by the summary's model name (`System.trained_as`): the sweep
    trial, train_nugget, the train_baselines system; a system without its summary is an error."""
    trained = SimpleNamespace(sweep=NuggetSweep.read(inputs["sweep_nugget"]), nugget=TrainedNugget.read(inputs["train_nugget"]),
                              baselines=TrainedBaselines.read(inputs["train_baselines"]))
    systems = collect_systems(trained, encoder_side=None)
    summaries = training_summaries(trained)
    assert sorted(s.trained_as for s in systems) == sorted(s.model for s in summaries)
    marked = [replace(s, input_use=IGNORES) if s.model in ("sweep_nugget/ae-r0.25-l1", "train_baselines/re_gating")
              else replace(s, input_use=InputUse(6.0, 7.5, 1.2, 1.8, 64)) if s.model == "train_nugget" else s
              for s in summaries]
    reasons = ignoring_input(systems, marked)
    assert {name for name, why in reasons.items() if why} == {"sweep:ae-r0.25-l1", "baseline:re_gating"}
    assert reasons["train_nugget"] == ""  # its loss rises with another document's input: it uses it
    with pytest.raises(ValueError, match=r"no training summary for \['sweep:ae-r0.1-l1'\]"):
        ignoring_input(systems, [s for s in summaries if s.model != "sweep_nugget/ae-r0.1-l1"])


def test_the_query_is_the_unit_of_an_mrr_and_its_floor_is_random_ranking():
    # two tasks that share a query are one unit (its reciprocal ranks summed, counted twice)
    tasks = [Task("q1", ("a", "b", "c", "d"), 0), Task("q2", tuple("abcdefghij"), 3), Task("q1", ("e", "f"), 1)]
    units = query_units(tasks, [100.0, 25.0, 50.0])
    assert (units.unit, units.ids, units.n) == ("query document", ("q1", "q2"), 2)
    assert units.stats.tolist() == [[150.0, 2.0], [25.0, 1.0]] and units.value() == pytest.approx(175 / 3)
    # a random ranking's expected MRR, averaged over tasks of different sizes
    floor = mrr_floor(tasks)
    assert floor.value == pytest.approx((random_mrr(4) + random_mrr(10) + random_mrr(2)) / 3)
    assert floor.higher_is_better and "2-10 candidates" in floor.what
    assert random_mrr(4) == pytest.approx(100 * (1 + 1 / 2 + 1 / 3 + 1 / 4) / 4)


def test_a_share_of_nugget_tokens_resamples_documents_not_tokens():
    """20 documents of 10 nuggets each: 'the' is every nugget of half of them and none of the others. The
    share is 50% of 200 nugget tokens, but the tokens are not 200 independent draws: the documents are 20.
    Their interval is far wider than a Wilson interval over the tokens (what fig. 5 showed at 7fe72b7)."""
    stats = TokenStats()
    for d in range(20):
        word = "the" if d % 2 else "cat"
        stats.add([word] * 10 + ["dog"] * 30, [True] * 10 + [False] * 30)
    ids = [f"doc{d}" for d in range(20)]
    sample = stats.share_sample("nuggets", lambda t: t == "the", ids)
    assert (sample.unit, sample.n) == ("document", 20) and sample.value() == stats.word_share(stats.nuggets, "the") == 50.0
    assert sample.stats[:2].tolist() == [[0.0, 10.0], [1000.0, 10.0]]  # per document: 100 x hits, nuggets
    low, high = sample.interval()
    wilson = share_interval(50.0, 200)
    assert high - low > 2.5 * (wilson[1] - wilson[0])
    text = stats.share_sample("text", lambda t: t == "the", ids)
    assert text.value() == pytest.approx(100 * 100 / 800) and text.stats[:, 1].tolist() == [40.0] * 20
    with pytest.raises(ValueError, match="3 ids for 20 documents"):
        stats.share_sample("text", Counter().__contains__, ids[:3])


def _bad_units(record: dict) -> dict:
    return {**record, "units": {"bleu": {"unit": "document", "statistic": "bleu", "ids": ["d1"], "stats": "12"}}}


@pytest.mark.parametrize("writer", [
    lambda out, r: ReconstructionResults([r], "dev", 5).write(out),
    lambda out, r: SimilarityResults([{**r, "mode": "nugget", "task": "pi", "mrr": 50.0, "n_tasks": 1, "data": "x"}]).write(out),
    lambda out, r: NuggetAnalysis({"m": {**r, "top": [], "the_share_nuggets": 1.0, "the_share_text": 2.0,
                                         "punctuation_share_nuggets": 3.0, "punctuation_share_text": 4.0}}, {}).write(out),
], ids=["reconstruction", "similarity", "analysis"])
def test_a_malformed_units_field_is_named(tmp_path, writer):
    record = {"label": "AE r=0.1", "name": "sweep:ae", "kind": "nugget", "objective": "ae", "bleu": 1.0, "n_docs": 1}
    writer(tmp_path, _bad_units(record))
    reader = {ReconstructionResults.FILE: ReconstructionResults, SimilarityResults.FILE: SimilarityResults,
              NuggetAnalysis.FREQUENCY: NuggetAnalysis}
    (contract,) = [c for name, c in reader.items() if (tmp_path / name).is_file()]
    with pytest.raises(ContractError, match=r"field 'units' of .* is malformed: units 'bleu' of system '(AE r=0.1|m)'"):
        contract.read(tmp_path)


def test_a_malformed_floor_is_named(tmp_path):
    ReconstructionResults([], "dev", 5, floors={"ae": Floor(10.0, True, "BLEU 10")}).write(tmp_path)
    assert ReconstructionResults.read(tmp_path).floors == {"ae": Floor(10.0, True, "BLEU 10")}
    raw = json.loads((tmp_path / ReconstructionResults.FILE).read_text())
    raw["floors"]["ae"]["value"] = "ten"
    (tmp_path / ReconstructionResults.FILE).write_text(json.dumps(raw))
    with pytest.raises(ContractError, match=r"field 'floors' of .* is malformed: floor 'ae'"):
        ReconstructionResults.read(tmp_path)
