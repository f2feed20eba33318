"""RE table 10 on tiny fixtures: build_re_downstream reads GLUE SST-2, SST fine-grained (SetFit's
jsonl and the PTB trees) and TREC in their published layouts, or builds the offline stand-in;
eval_re_downstream probes the frozen embeddings of train_re's encoders and of the untrained one."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
import torch

from stages.common.floors import majority_floor
from stages.common.resampling import MIN_UNITS, difference
from stages.restorable.artifacts import DownstreamTasks, TrainedRestorable
from stages.restorable.downstream_data import (
    read_sst2,
    read_sst5,
    read_trec,
    trec_rows,
    tree_example,
)
from tests.evaluation.fixtures import _nugget, artifact, context
from tests.rehearsal.classification_sets import write_re_downstream
from tests.training.fixtures import make_mt_artifacts


@pytest.fixture(scope="module")
def layouts(tmp_path_factory) -> tuple[Path, list[str]]:
    root = tmp_path_factory.mktemp("tasks")
    return root, write_re_downstream(root)


def test_each_published_layout_is_read(layouts):
    root, _ = layouts
    sst2 = read_sst2(root / "glue/SST-2", 0.2, seed=0)
    dev_rows = (root / "glue/SST-2/dev.tsv").read_text().splitlines()[1:]
    assert sst2.splits["test"] == [(line.split("\t")[0].strip(), ("negative", "positive")[int(line.split("\t")[1])])
                                   for line in dev_rows]  # GLUE's dev split is the test split
    assert sst2.splits["dev"] and sst2.selection == "dev" and sst2.labels == ["negative", "positive"]
    train_rows = len((root / "glue/SST-2/train.tsv").read_text().splitlines()) - 1
    assert len(sst2.splits["train"]) + len(sst2.splits["dev"]) == train_rows
    jsonl, trees = read_sst5(root / "sst5"), read_sst5(root / "sst")
    assert jsonl.splits == trees.splits and jsonl.selection == "dev" and len(jsonl.labels) == 5  # one data, two layouts
    assert tree_example("(3 (2 (2 the) (2 film)) (4 rocks))", "x") == ("the film rocks", "positive")
    trec = read_trec(root / "trec")
    assert set(trec) == {"trec_coarse", "trec_fine"} and all(t.selection == "cv" and "dev" not in t.splits
                                                             for t in trec.values())
    assert {"HUM", "LOC", "NUM"} <= set(trec["trec_coarse"].labels) and "LOC:city" in trec["trec_fine"].labels
    assert any("Zürich" in text for text, _ in trec["trec_coarse"].splits["test"])  # latin-1, as released


def test_malformed_files_are_named(tmp_path):
    bad = tmp_path / "TREC_10.label"
    bad.write_text("What is this ?\n")
    with pytest.raises(ValueError, match="TREC_10.label:1: not 'COARSE:fine question'"):
        trec_rows(bad)
    (tmp_path / "train.tsv").write_text("sentence\tlabel\ngood film\t7\n")
    (tmp_path / "dev.tsv").write_text("sentence\tlabel\n")
    with pytest.raises(ValueError, match="train.tsv: row 1 has label '7'"):
        read_sst2(tmp_path, 0.1, 0)
    with pytest.raises(FileNotFoundError, match="neither train.jsonl"):
        read_sst5(tmp_path)


def build(layouts_or_none, out: Path, overrides: list[str]) -> DownstreamTasks:
    from stages.restorable.build_re_downstream import BuildREDownstream

    BuildREDownstream().run(context(BuildREDownstream, {}, out, overrides))
    return DownstreamTasks.read(out)


def test_build_writes_every_task_with_its_selection(layouts, tmp_path):
    root, overrides = layouts
    data = build(root, tmp_path / "data", ["profile=paper", *overrides])
    assert list(data.tasks) == ["sst2", "sst5", "trec_coarse", "trec_fine"] and data.stand_in == ""
    assert {t: e["selection"] for t, e in data.tasks.items()} == {"sst2": "dev", "sst5": "dev", "trec_coarse": "cv",
                                                                  "trec_fine": "cv"}
    assert len(data.rows("trec_fine", "test")) == 24 and len(data.rows("sst5", "dev")) == 20
    with pytest.raises(ValueError, match="no 'dev' split"):
        data.rows("trec_coarse", "dev")


def test_the_stand_in_labels_sentences_by_source_and_document_group(tmp_path, monkeypatch):
    docs = {s: [[f"{s} document {d} says sentence number {i} here." for i in range(6)] for d in range(6)]
            for s in ("gensim_wiki", "python_docs")}
    monkeypatch.setattr("stages.restorable.downstream_stand_in.english_streams", lambda source, _: docs[source])
    data = build(None, tmp_path / "data", ["data.re_downstream.source=stand_in",
                                           "data.re_downstream.tasks=[trec_coarse,trec_fine]",
                                           "data.re_downstream.stand_in_sources=[gensim_wiki,python_docs]",
                                           "data.re_downstream.stand_in_groups=2"])
    assert "stand-in for TREC" in data.stand_in
    assert data.tasks["trec_coarse"]["labels"] == ["gensim_wiki", "python_docs"]
    assert data.tasks["trec_fine"]["labels"] == ["gensim_wiki:g0", "gensim_wiki:g1", "python_docs:g0", "python_docs:g1"]
    rows = data.rows("trec_fine", "train") + data.rows("trec_fine", "test")
    assert len(rows) == 72 and all(r["text"].startswith(r["label"].split(":")[0]) for r in rows)
    # documents 0-2 are a source's first group, 3-5 its second
    assert all((int(r["text"].split()[2]) >= 3) == r["label"].endswith("g1") for r in rows)
    assert [r["text"] for r in data.rows("trec_coarse", "test")] == [r["text"] for r in data.rows("trec_fine", "test")]


def _train_re(root: Path) -> dict:
    """A train_re output of two mean / gating encoders, (a) and (d) with 1 new layer, made
    without training (their new parts as drawn): the stage reads them as any other."""
    from transformers import AutoTokenizer

    from nugget_core import NuggetModel
    from nugget_core.restorable import RestorableConfig, get_restorable_model
    from stages.nugget.artifacts.models import TrainedNugget

    _, tok_dir = make_mt_artifacts(root)
    tok = AutoTokenizer.from_pretrained(tok_dir)
    nugget = root / "train_nugget"
    _nugget(tok, 0.25, 1, 9, nugget / "model")
    TrainedNugget(nugget / "model", "ae", 0.25, 1, "topk", True, dev_loss=3.0).write(nugget)
    records = []
    for config, frozen, layers in (("a", False, 0), ("d", True, 1)):
        name = f"n1_{config}_mean_gating"
        torch.manual_seed(len(records))
        model = get_restorable_model(NuggetModel.from_pretrained(nugget / "model").unload(), RestorableConfig(
            pooling="mean", decoder="gating", extra_layers=layers, freeze_pretrained=frozen))
        folder = TrainedRestorable.system_dir(root / "train_re", name) / "model"
        model.save_pretrained(folder)
        tok.save_pretrained(folder)
        (folder.parent / "trainer_state.json").write_text(json.dumps({  # what the training loop leaves beside it
            "step": 0, "initial_dev_loss": 1.0, "exported_dev_loss": 1.0, "dev_loss_n": 8, "tokens_seen": 0}))
        records.append({"system": name, "sentences": 1, "config": config, "pooling": "mean", "decoder": "gating",
                        "freeze_pretrained": frozen, "extra_layers": layers, "paper_row": f"1|{config}|mean|gating",
                        "base": "fixture", "max_tokens": 32, "model_dir": f"systems/{name}/model", "dev_loss": 1.0})
    TrainedRestorable(root / "train_re", records).write(root / "train_re")
    return {"train_nugget": artifact("train_nugget", nugget), "train_re": artifact("train_re", root / "train_re")}


def test_eval_re_downstream_probes_every_encoder(layouts, tmp_path, monkeypatch):
    from stages.artifacts.evaluate import EvalTable
    from stages.artifacts.trainer_state import InputUse
    from stages.config import load_config
    from stages.restorable.eval_re_downstream import EvalREDownstream, sample_rows

    root, overrides = layouts
    build(root, tmp_path / "data", ["profile=paper", *overrides])
    inputs = {**_train_re(tmp_path), "build_re_downstream": artifact("build_re_downstream", tmp_path / "data")}
    settings = ["eval.re_downstream.l2_grid=[0.0001,0.01]", "eval.re_downstream.cv_folds=3",
                "eval.re_downstream.max_iter=30", "eval.re_downstream.max_train=40"]
    # the (d) model's decoder ignores the embedding (its trainer state's check, as the loop would record it)
    read = TrainedRestorable.training
    ignoring = InputUse(own=2.0, other=2.001, low=-0.004, high=0.006, n=40)
    monkeypatch.setattr(TrainedRestorable, "training", lambda self: [
        dataclasses.replace(s, input_use=ignoring if s.model.endswith("n1_d_mean_gating") else None)
        for s in read(self)])
    ctx = context(EvalREDownstream, inputs, tmp_path / "eval", settings)
    EvalREDownstream().run(ctx)
    table = EvalTable.read(tmp_path / "eval", "eval_re_downstream")
    assert [(r.system, r.paper_row) for r in table.rows] == [
        ("pretrained_0", "pretrained|0"), ("pretrained_1", "pretrained|1"), ("n1_a_mean_gating", "grad|1|0"),
        ("n1_d_mean_gating", "freeze|1|1")]
    tests = {"sst2": 9, "sst5": 20, "trec_coarse": 24, "trec_fine": 24}
    glue_dev = len((root / "glue/SST-2/dev.tsv").read_text().splitlines()) - 1
    tests["sst2"] = glue_dev
    for row in table.rows:
        for task, n in tests.items():
            assert 0 <= row.metrics[task] <= 100 and row.metrics[f"n_{task}"] == n
            low, high = row.interval[task]
            assert low <= row.metrics[task] <= high  # Wilson's interval around the accuracy
            assert row.metrics[f"l2_{task}"] in (0.0001, 0.01)
    samples = [json.loads(x) for x in (tmp_path / "eval" / "examples.jsonl").read_text().splitlines()]
    assert len(samples) == len(table.rows) * sum(tests.values())
    first = samples[0]
    assert {"id", "system", "task", "text", "target", "output", "correct", "l2", "selection"} <= set(first)
    for row in table.rows:  # each accuracy is the share of its correct samples
        mine = [s for s in samples if s["system"] == row.system and s["task"] == "trec_fine"]
        assert row.metrics["trec_fine"] == pytest.approx(100 * sum(s["correct"] for s in mine) / len(mine))
    assert ctx.logger.metrics["n1_a_mean_gating/n_sst5"] == 20
    # every encoder is scored on the same test sentences, one unit each, under the same ids: the restoration-
    # trained encoder and the untrained one pair over them (table 10's "keeps accuracy" is a paired difference)
    data = DownstreamTasks.read(tmp_path / "data")
    for task, n in tests.items():
        ids = [r["id"] for r in data.rows(task, "test")]
        for row in table.rows:
            unit = row.units[task]
            assert (unit.unit, unit.statistic, list(unit.ids), unit.n) == ("sentence", "ratio", ids, n)
            assert unit.value() == pytest.approx(row.metrics[task])
        kept, reference = table.row("n1_a_mean_gating").units[task], table.row("pretrained_0").units[task]
        diff = difference(kept, reference)
        if n < MIN_UNITS:  # sst2's 17 test sentences: too few for the difference's interval
            assert diff is None
        else:
            assert diff is not None and diff.paired and diff.n == n
            assert diff.value == pytest.approx(table.row("n1_a_mean_gating").metrics[task]
                                               - table.row("pretrained_0").metrics[task])
        # the floor: the majority label of the probe's own train split (max_train=40: its seeded sample)
        train = sample_rows(data.rows(task, "train"), 40, load_config(settings).run.seed, f"{task}:train")
        assert table.floors[task] == majority_floor([r["label"] for r in train],
                                                    [r["label"] for r in data.rows(task, "test")])
        assert ctx.logger.metrics[f"floor/{task}"] == table.floors[task].value
        assert ctx.logger.metrics[f"n1_a_mean_gating/{task}_units"] == n
    # the (d) model's restoration training ignored the embedding: its row says so, no other does
    assert {r.system for r in table.rows if r.ignores_input} == {"n1_d_mean_gating"}
    assert "train_re/n1_d_mean_gating ignores its input" in table.row("n1_d_mean_gating").ignores_input


def test_test_rows_never_reach_the_choice_of_the_penalty():
    from stages.config import load_config
    from stages.restorable.eval_re_downstream import probe_task

    cfg = load_config(["eval.re_downstream.l2_grid=[0.0001,1.0]", "eval.re_downstream.max_iter=30"]).eval.re_downstream
    g = torch.Generator(device="cpu").manual_seed(0)
    vectors = torch.randn(90, 6, generator=g, device="cpu")
    texts = [f"t{i}" for i in range(90)]
    label = ["x" if v[0] > 0 else "y" for v in vectors]
    rows = [{"id": f"x:{i}", "text": t, "label": lab} for i, (t, lab) in enumerate(zip(texts, label, strict=True))]
    index = {t: i for i, t in enumerate(texts)}
    splits = {"train": rows[:50], "dev": rows[50:70], "test": rows[70:]}
    flipped = {**splits, "test": [{**r, "label": "y" if r["label"] == "x" else "x"} for r in rows[70:]]}
    a, b = (probe_task(vectors, index, s, ["x", "y"], cfg, 0) for s in (splits, flipped))
    assert (a.l2, a.scores) == (b.l2, b.scores) and a.predicted == b.predicted
    assert a.accuracy + b.accuracy == pytest.approx(100)


def test_the_hub_datasets_map_onto_the_same_tasks(monkeypatch):
    """With a folder empty, the hub dataset by name (`HF_NAMES`), read as the hub lays it out."""
    from types import SimpleNamespace

    from stages.restorable.downstream_data import hub_task

    class Rows(list):
        features = {"coarse_label": SimpleNamespace(names=["HUM", "LOC"]),
                    "fine_label": SimpleNamespace(names=["HUM:ind", "LOC:city"])}

    asked = []

    def load_rows(source, split):
        asked.append((source, split))
        if source == "trec":
            return Rows([{"text": "Who ?", "coarse_label": 0, "fine_label": 0},
                         {"text": "Where ?", "coarse_label": 1, "fine_label": 1}])
        if source == "glue_sst2":
            return [{"sentence": f"s{i} ", "label": i % 2, "idx": i} for i in range(40)]
        return [{"text": "ok", "label": 2, "label_text": "neutral"}]

    monkeypatch.setattr("stages.corpora.paper_sources.load_rows", load_rows)
    trec = hub_task("trec", 0.0, 0)
    assert trec["trec_fine"].splits["test"] == [("Who ?", "HUM:ind"), ("Where ?", "LOC:city")]
    assert trec["trec_coarse"].labels == ["HUM", "LOC"] and trec["trec_coarse"].selection == "cv"
    sst2 = hub_task("sst2", 0.25, 0)["sst2"]
    assert len(sst2.splits["test"]) == 40 and 0 < len(sst2.splits["dev"]) < 40 and sst2.splits["test"][0] == ("s0", "negative")
    assert hub_task("sst5", 0.0, 0)["sst5"].splits["dev"] == [("ok", "neutral")]
    assert ("glue_sst2", "validation") in asked and ("sst5", "validation") in asked and ("trec", "test") in asked
