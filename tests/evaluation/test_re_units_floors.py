"""The RE evaluations' resampling units, competence floors and ignores-input marks:
restoration resamples the documents its texts were cut from, retrieval the queries, under ids
shared by every system scored on them; the floors are what a trivial system reaches on the same
examples (the best constant restoration, a Kneser-Ney trigram LM, a random ranking); a system
whose model ignores its input says so; the report's cells carry all of it."""

from __future__ import annotations

import json
import math
import random
from itertools import combinations

import pytest

from stages.artifacts.evaluate import Column, EvalTable, TableRow
from stages.artifacts.trainer_state import InputUse, TrainingSummary
from stages.common.floors import Floor, best_constant, random_mrr
from stages.common.intervals import share_interval
from stages.common.ngram import KneserNeyTrigram
from stages.common.resampling import MIN_UNITS, UnitSample, difference
from stages.evaluation.rouge import ROUGE_TYPES, constant_rouge, rouge_mean, rouge_per_example
from stages.restorable.artifacts import (
    RestorationTexts,
    TrainedRestorable,
    ignored_inputs,
    restoration_floor_key,
)
from stages.restorable.eval_re_retrieval import (
    first_hit_chances,
    random_ranking_floors,
    retrieval_row,
)
from stages.restorable.restoration import system_row
from stages.restorable.restoration_texts import document_of
from tests.evaluation.fixtures import stored_table

WORDS = "the river runs to a sea where ships sail past old towns and quiet fields under grey skies".split()


def _texts(n: int, seed: int, words: tuple[int, int] = (4, 12)) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choices(WORDS, k=rng.randint(*words))) for _ in range(n)]


def _restoration(documents: list[str], seed: int = 0) -> TableRow:
    """A system row of one text per entry of ``documents`` (the document it was cut from)."""
    rng = random.Random(seed)
    nll = [rng.uniform(5, 30) for _ in documents]
    counts = [rng.randint(5, 12) for _ in documents]
    rouge = [{t: rng.uniform(0, 100) for t in ROUGE_TYPES} for _ in documents]
    return system_row({"system": f"s{seed}", "paper_row": "1|d|mean|gating"}, nll, counts, rouge,
                      [f"out {i}" for i in range(len(documents))], documents)


def test_windows_of_one_document_are_one_restoration_unit():
    texts = [f"{d}:{s}" for d in range(20) for s in (0, 3)]  # two windows of each of 20 documents
    row = _restoration([document_of(t) for t in texts])
    assert row.n == 40
    for metric in ("ppl", "rouge1", "rouge2", "rougeL"):
        unit = row.units[metric]
        assert (unit.unit, unit.n, unit.ids[:2]) == ("document", 20, ("0", "1"))
        assert row.interval[metric] == unit.interval()  # the bootstrap over documents, not over texts
    assert row.units["ppl"].statistic == "exp_ratio" and row.metrics["ppl"] == pytest.approx(row.units["ppl"].value())
    assert row.units["rougeL"].stats[0, 1] == 2  # [F1 sum, texts] of document 0
    assert row.metrics["rougeL"] == pytest.approx(row.units["rougeL"].value()) and row.stderr == {}
    # two systems scored on the same texts pair over their documents
    diff = difference(row.units["rougeL"], _restoration([document_of(t) for t in texts], seed=1).units["rougeL"])
    assert diff is not None and diff.paired and diff.n == 20
    # below MIN_UNITS documents there is no interval, however many texts
    few = _restoration([str(i % (MIN_UNITS - 1)) for i in range(60)])
    assert few.interval == {} and few.units["rouge1"].n == MIN_UNITS - 1
    with pytest.raises(ValueError, match="is not '<document>:<first sentence>'"):
        document_of("no-window")


def test_constant_rouge_is_rouge_scores_mean():
    refs = _texts(12, 1, (0, 25)) + ["", "runs ran running river"]
    for output in [*_texts(8, 2, (0, 25)), "", "the the the"]:
        fast, slow = constant_rouge(output, refs), rouge_mean(rouge_per_example([output] * len(refs), refs))
        assert fast == pytest.approx(slow, abs=1e-9)


def _write_texts(root, train: list[str], dev: list[str]) -> RestorationTexts:
    (root / "n1").mkdir(parents=True)
    for split, texts in (("train", train), ("dev", dev)):
        (root / "n1" / f"{split}.jsonl").write_text("".join(
            json.dumps({"id": f"{i // 2}:{i % 2}", "text": t, "sentences": [t]}) + "\n" for i, t in enumerate(texts)))
    (root / "stats.json").write_text(json.dumps({"source": "synthetic", "stand_in": "synthetic", "counts": {"1": {
        "train": len(train), "dev": len(dev), "mean_words": 8.0, "dropped_long": 0, "dropped_tail": 0}}}))
    return RestorationTexts.read(root)


def test_restoration_floors_are_on_the_scored_texts(tmp_path):
    from stages.restorable.restoration import target_ids
    from stages.restorable.restoration_floors import RestorationFloors
    from tests.lm_eval.fixtures import make_tokenizer

    tok = make_tokenizer()
    texts = _write_texts(tmp_path / "texts", _texts(60, 3), _texts(20, 4))
    dev = texts.texts(1, "dev")
    floors = RestorationFloors(texts)
    floors.add(1, dev, tok, 16)
    # ROUGE: the best constant output's mean ROUGE on the same texts
    for metric in ROUGE_TYPES:
        best, output = best_constant(dev, lambda h, r, m=metric: rouge_mean(rouge_per_example(h, r))[m])
        floor = floors.floors[restoration_floor_key(1, metric)]
        assert floor.value == pytest.approx(best) and floor.higher_is_better and output[:20] in floor.what
    # PPL: a Kneser-Ney trigram fitted on the train split's targets, on the dev targets
    lm = KneserNeyTrigram.fit(target_ids(tok, texts.texts(1, "train"), 16), len(tok))
    targets = target_ids(tok, dev, 16)
    expected = math.exp(sum(lm.token_nll(t).sum() for t in targets) / sum(map(len, targets)))
    ppl = floors.floors[restoration_floor_key(1, "ppl")]
    assert ppl.value == pytest.approx(expected) and not ppl.higher_is_better and "60 train texts" in ppl.what
    floors.add(1, dev, tok, 16)  # a second system on the same tokens: the same floors
    assert restoration_floor_key(1, "ppl") in floors.floors and floors.notes == []
    floors.add(1, dev, tok, 4)  # truncated otherwise: not the floor's tokens
    assert restoration_floor_key(1, "ppl") not in floors.floors and "tokenise their texts differently" in floors.notes[0]
    assert restoration_floor_key(1, "rougeL") in floors.floors


def test_random_ranking_floors():
    # one positive among P: R@k = 100 k / P and MRR (k_max >= P) = random_mrr(P)
    floors = random_ranking_floors(24, [1, 1, 1], [1, 5, 20], 100, "id")
    assert [floors[f"r@{k}"].value for k in (1, 5, 20)] == pytest.approx([100 / 24, 500 / 24, 2000 / 24])
    assert floors["mrr"].value == pytest.approx(random_mrr(24)) and "24 passages" in floors["mrr"].what
    # m positives: the first hit's rank as counted over every ranking of a small collection
    p, m, k_max = 7, 2, 3
    ranks = [min(a, b) + 1 for a, b in combinations(range(p), m)]  # positions of the two positives, all equally likely
    chances = first_hit_chances(p, m, k_max)
    assert chances == pytest.approx([sum(r == k for r in ranks) / len(ranks) for k in range(1, k_max + 1)])
    mixed = random_ranking_floors(p, [1, m], [1, 3], k_max, "answer")
    assert mixed["r@3"].value == pytest.approx(100 * (3 / 7 + sum(r <= 3 for r in ranks) / len(ranks)) / 2)
    assert mixed["mrr"].value == pytest.approx(100 * (sum(1 / r for r in range(1, 4)) / 7
                                                      + sum(1 / r for r in ranks if r <= 3) / len(ranks)) / 2)
    assert "one answer passage per query assumed" in mixed["mrr"].what


def test_retrieval_units_are_queries():
    queries = [f"q{i}" for i in range(20)]
    ranks = [1, 2, 0, 4, 1] * 4
    row = retrieval_row({"system": "s", "paper_row": "grad|1|0"}, ranks, 50, [1, 5, 100], queries)
    assert set(row.units) == {"r@1", "r@5", "mrr"} and row.units["mrr"].ids == tuple(queries)
    assert row.metrics["mrr"] == pytest.approx(100 * sum(1 / r for r in ranks if r) / 20)
    assert row.interval["mrr"] == row.units["mrr"].interval() and row.stderr == {}
    assert row.interval["r@1"] == pytest.approx(share_interval(40.0, 20))  # Wilson's: 8 of 20 independent queries
    other = retrieval_row({"system": "t", "paper_row": "pretrained|0"}, [0] * 20, 50, [1, 5, 100], queries)
    assert difference(row.units["mrr"], other.units["mrr"]).paired
    # a query id twice among the test rows is one query: recall's interval is then the bootstrap over queries
    twice = retrieval_row({"system": "s", "paper_row": "p"}, ranks + [1], 50, [1], [*queries, "q0"])
    assert twice.units["r@1"].n == 20 and twice.interval["r@1"] == twice.units["r@1"].interval()


def test_ignored_inputs_map_each_system_to_its_own_summary(tmp_path, monkeypatch):
    trained = TrainedRestorable(tmp_path, [{"system": "a"}, {"system": "b"}, {"system": "c"}])
    uses = {"a": InputUse(2.0, 2.5, 0.4, 0.6, 40), "b": InputUse(2.0, 2.0, -0.01, 0.01, 40), "c": None}
    monkeypatch.setattr(TrainedRestorable, "training", lambda self: [
        TrainingSummary(f"train_re/{r['system']}", 10, 3.0, 2.0, 100, 1000, input_use=uses[r["system"]])
        for r in self.systems])
    assert ignored_inputs(trained) == {"b": uses["b"].reason()} and uses["b"].reason().startswith("ignores its input")


def test_the_report_cells_carry_units_floors_and_ignored_inputs(tmp_path):
    from stages.report.re_tables import downstream_table, restoration_tables, retrieval_table

    docs = [str(i) for i in range(20)]
    k1 = _restoration(docs)
    k3 = TableRow("s3", {"ppl": 4.0, "rouge1": 30.0, "rouge2": 5.0, "rougeL": 20.0}, n=20, paper_row="3|d|mean|gating",
                  units={"rougeL": UnitSample.of("document", "ratio", docs, [[20.0, 1.0]] * 20)},
                  ignores_input="ignores its input: dev loss 2.000 with its own example's input")
    floors = {restoration_floor_key(1, "rougeL"): Floor(12.0, True, "best constant"),
              restoration_floor_key(3, "rougeL"): Floor(25.0, True, "best constant"),
              restoration_floor_key(3, "ppl"): Floor(90.0, False, "trigram")}
    (tmp_path / "r").mkdir()
    EvalTable("t", [Column("rougeL", "R-L")], [k1, k3], floors=floors).write(tmp_path / "r")
    tables = {t.id: t for t in restoration_tables(stored_table("eval_re_restoration", tmp_path / "r"), "ctx")}
    cells = {(c, v.label.split("[")[-1]): v for t in tables.values() for _, c, v in t.numbers}
    assert cells["rougeL", "s0]"].floor == floors["n1/rougeL"]
    assert cells["rougeL", "s0]"].units.to_json() == k1.units["rougeL"].to_json()
    assert cells["rougeL", "s3]"].floor == floors["n3/rougeL"] and cells["ppl", "s3]"].floor == floors["n3/ppl"]
    assert cells["rougeL", "s3]"].below_floor and cells["rougeL", "s3]"].ignores_input.startswith("ignores its input")
    assert cells["rougeL", "s0]"].floor.reached_by(cells["rougeL", "s0]"].value)
    assert any("competence floor > 25" in n for n in tables["re_table8_k3"].notes())
    assert any("resample documents" in n for n in tables["re_table8_k1"].notes())

    queries = [f"q{i}" for i in range(20)]
    retrieval = [retrieval_row({"system": s, "paper_row": p}, [1, 2, 0, 4] * 5, 24, [1, 5, 20, 100], queries)
                 for s, p in (("pre", "pretrained|0"), ("grad", "grad|1|0"))]
    (tmp_path / "q").mkdir()
    EvalTable("t", [Column("r@1", "R@1")], retrieval, floors=random_ranking_floors(24, [1] * 20, [1, 5, 20], 100,
                                                                                  "id")).write(tmp_path / "q")
    t9 = retrieval_table(stored_table("eval_re_retrieval", tmp_path / "q"), "ctx")
    r20 = [v for _, c, v in t9.numbers if c == "r@20"]
    assert len(r20) == 2 and all(v.floor.value == pytest.approx(2000 / 24) and v.unit == "query" for v in r20)
    assert all(v.below_floor for v in r20)  # 75 < a random ranking's 83.3

    units = {task: UnitSample.of("sentence", "ratio", [f"{task}:test:{i}" for i in range(20)],
                                 [[100.0 * (i % 3 > 0), 1.0] for i in range(20)]) for task in ("trec_coarse",)}
    rows = [TableRow(s, {"trec_coarse": units["trec_coarse"].value()}, n=20, paper_row=p, units=units)
            for s, p in (("pretrained_0", "pretrained|0"), ("n1_a", "grad|1|0"))]
    (tmp_path / "d").mkdir()
    EvalTable("t", [Column("trec_coarse", "c")], rows, floors={"trec_coarse": Floor(50.0, True, "majority")}).write(
        tmp_path / "d")
    t10 = downstream_table(stored_table("eval_re_downstream", tmp_path / "d"), "ctx")
    kept, reference = (next(v for _, c, v in t10.numbers if v.label.endswith(f"[{s}]")) for s in ("n1_a", "pretrained_0"))
    assert kept.floor.value == 50.0 and difference(kept.units, reference.units).paired
