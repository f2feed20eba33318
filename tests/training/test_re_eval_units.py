"""eval_re_restoration and eval_re_retrieval on untrained fixture models (no Ray): what each
interval resamples (restoration: the documents its texts were cut from; retrieval: the queries),
under unit ids shared by every system, the floors on the same examples, the systems whose model
ignores its input, and what goes to MLflow."""

from __future__ import annotations

import dataclasses
import json
import random
import shutil

import pytest

from stages.artifacts.evaluate import EvalTable
from stages.artifacts.trainer_state import InputUse
from stages.common.resampling import difference
from stages.restorable.artifacts import RetrievalData, TrainedRestorable, TrainedRetrieval
from tests.evaluation.fixtures import artifact, context
from tests.training.fixtures import WORDS
from tests.training.test_re_downstream import _train_re
from tests.training.test_re_stages import write_rr

IGNORING = InputUse(own=2.0, other=2.001, low=-0.004, high=0.006, n=40)  # a model whose loss ignores its input


def _ignoring(monkeypatch, output: type, system: str) -> None:
    """``output``'s trainer states as read, with ``system``'s model found to ignore its input."""
    read = output.training
    monkeypatch.setattr(output, "training", lambda self: [
        dataclasses.replace(s, input_use=IGNORING if s.model.endswith(f"/{system}") else None) for s in read(self)])


def _texts(root) -> None:
    """build_re_data's layout with two 1-sentence windows of each document (``<doc>:0``, ``<doc>:1``)."""
    (root / "n1").mkdir(parents=True)
    rng = random.Random(0)
    for split, n in {"train": 30, "dev": 20}.items():
        sentences = [" ".join(rng.choices(WORDS, k=rng.randint(3, 6))) + "." for _ in range(2 * n)]
        rows = [{"id": f"{split}{i // 2}:{i % 2}", "text": t, "sentences": [t]} for i, t in enumerate(sentences)]
        (root / "n1" / f"{split}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (root / "stats.json").write_text(json.dumps({"source": "synthetic", "stand_in": "synthetic (stand-in for C4)",
                                                 "counts": {"1": {"train": 60, "dev": 40, "mean_words": 5.0,
                                                                  "dropped_long": 0, "dropped_tail": 0}}}))


def test_restoration_resamples_documents_pairs_systems_and_has_floors(tmp_path, monkeypatch):
    from stages.restorable.eval_re_restoration import EvalRERestoration

    _texts(tmp_path / "texts")
    inputs = {**_train_re(tmp_path), "build_re_data": artifact("build_re_data", tmp_path / "texts")}
    _ignoring(monkeypatch, TrainedRestorable, "n1_d_mean_gating")
    ctx = context(EvalRERestoration, {k: inputs[k] for k in ("build_re_data", "train_re")}, tmp_path / "eval",
                  ["eval.re.max_examples=40", "eval.re.beam_size=1", "eval.re.batch_size=12",
                   "eval.re.extra_tokens=2"])
    EvalRERestoration().run(ctx)
    table = EvalTable.read(tmp_path / "eval", "eval_re_restoration")
    documents = tuple(f"dev{i}" for i in range(20))  # 40 texts: two windows of each of 20 documents
    for row in table.rows:
        assert row.n == 40 and row.stderr == {}
        for metric in ("ppl", "rouge1", "rouge2", "rougeL"):
            unit = row.units[metric]
            assert (unit.unit, unit.ids) == ("document", documents) and unit.stats[:, 1].sum() == (
                row.metrics["n_ppl"] if metric == "ppl" else 40)
            assert unit.value() == pytest.approx(row.metrics[metric])
            assert row.interval[metric] == pytest.approx(unit.interval())  # 20 documents: the bootstrap over them
            assert ctx.logger.metrics[f"{row.system}/{metric}_units"] == 20
            assert ctx.logger.metrics[f"{row.system}/{metric}_low"] == pytest.approx(row.interval[metric][0])
    a, d = table.row("n1_a_mean_gating"), table.row("n1_d_mean_gating")
    assert difference(a.units["rougeL"], d.units["rougeL"]).paired
    assert d.ignores_input == IGNORING.reason() and a.ignores_input == ""
    assert set(table.floors) == {"n1/ppl", "n1/rouge1", "n1/rouge2", "n1/rougeL"}
    assert not table.floors["n1/ppl"].higher_is_better and "60 train texts" in table.floors["n1/ppl"].what
    assert ctx.logger.metrics["floor/n1/rougeL"] == table.floors["n1/rougeL"].value > 0


def _trained_retrieval(root) -> dict:
    """A train_re_retrieval output of the fixture's two train_re models, each as both towers."""
    restorable = _train_re(root)
    trained = TrainedRestorable.read(root / "train_re")
    records = []
    for r, paper_row in zip(trained.systems, ("pretrained|1", "freeze|1|1"), strict=True):
        folder = TrainedRetrieval.system_dir(root / "train_re_retrieval", r["system"])
        for tower in ("query", "passage"):
            shutil.copytree(trained.model_dir(r), folder / "model" / tower)
        shutil.copy(trained.model_dir(r).parent / "trainer_state.json", folder / "trainer_state.json")
        records.append({"system": r["system"], "paper_row": paper_row, "init": "fixture", "sentences": 1,
                        "config": r["config"], "max_query_tokens": 16, "max_passage_tokens": 24,
                        "model_dir": f"systems/{r['system']}/model", "dev_loss": 1.0})
    TrainedRetrieval(root / "train_re_retrieval", records).write(root / "train_re_retrieval")
    return {**restorable, "train_re_retrieval": artifact("train_re_retrieval", root / "train_re_retrieval")}


def test_retrieval_resamples_queries_pairs_bi_encoders_and_has_floors(tmp_path, monkeypatch):
    from stages.restorable.build_re_retrieval import BuildRERetrieval
    from stages.restorable.eval_re_retrieval import EvalRERetrieval

    (tmp_path / "rr").mkdir()
    write_rr(tmp_path / "rr", n_tasks=40)
    BuildRERetrieval().run(context(BuildRERetrieval, {"build_rr": artifact("build_rr", tmp_path / "rr")},
                                   tmp_path / "data", []))
    data = RetrievalData.read(tmp_path / "data")
    queries = tuple(t["id"] for t in data.rows("test"))
    inputs = {**_trained_retrieval(tmp_path), "build_re_retrieval": artifact("build_re_retrieval", tmp_path / "data")}
    _ignoring(monkeypatch, TrainedRetrieval, "n1_a_mean_gating")
    ctx = context(EvalRERetrieval, {k: inputs[k] for k in ("train_re_retrieval", "build_re_retrieval")},
                  tmp_path / "eval", ["eval.re.recall_at=[1,5,100]", "eval.re.batch_size=16"])
    EvalRERetrieval().run(ctx)
    table = EvalTable.read(tmp_path / "eval", "eval_re_retrieval")
    assert len(queries) >= 15 and table.rows[0].metrics["passages"] == 40
    for row in table.rows:
        assert {m: (u.unit, u.ids) for m, u in row.units.items()} == {
            m: ("query", queries) for m in ("r@1", "r@5", "mrr")}
        assert row.interval["mrr"] == pytest.approx(row.units["mrr"].interval()) and row.stderr == {}
    assert difference(table.rows[0].units["mrr"], table.rows[1].units["mrr"]).paired
    assert [r.ignores_input for r in table.rows] == [IGNORING.reason(), ""]
    assert table.floors["r@5"].value == pytest.approx(500 / 40) and table.floors["r@1"].value == pytest.approx(2.5)
    assert ctx.logger.metrics["floor/mrr"] == pytest.approx(table.floors["mrr"].value)
