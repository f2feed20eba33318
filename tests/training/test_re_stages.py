"""The RE study's training and evaluation stages on tiny fixtures: train_re (a cut of the
grid) on Ray Train from a fixture train_nugget AE model, eval_re_restoration (PPL and
ROUGE per system), train_re_retrieval (DPR bi-encoders from the RE encoders and the
untrained pretrained encoder) and eval_re_retrieval (recall@k / MRR on held-out queries)."""

from __future__ import annotations

import dataclasses
import json
import math
import random
from pathlib import Path

import pytest

from stages.common.intervals import share_interval
from stages.restorable.artifacts import RetrievalData, TrainedRestorable, TrainedRetrieval
from tests.evaluation.fixtures import _nugget, artifact, context
from tests.training.fixtures import WORDS, make_docs, make_mt_artifacts

pytestmark = pytest.mark.ray

SMALL = ["train.re.sentence_counts=[1]", "train.re.configs=[d]", "train.re.poolings=[mean]",
         "train.re.decoders=[input,cross,gating]", "train.re.extra_layers=1", "train.re.max_steps=2",
         "train.re.batch_size=4", "train.re.eval_every=2", "train.re.checkpoint_every=2", "train.re.dev_examples=4",
         "eval.re.max_examples=3", "eval.re.beam_size=2", "eval.re.batch_size=2",
         "train.re_retrieval.configs=[d]", "train.re_retrieval.sentence_counts=[1]", "train.re_retrieval.max_steps=2",
         "train.re_retrieval.batch_size=3", "train.re_retrieval.eval_every=2", "train.re_retrieval.checkpoint_every=2",
         "train.re_retrieval.dev_examples=3", "train.re_retrieval.max_passage_tokens=24"]


def write_texts(out: Path) -> None:
    """build_re_data's layout: ``n1/{train,dev}.jsonl`` and ``stats.json``."""
    for split, (n, seed) in {"train": (16, 1), "dev": (4, 2)}.items():
        (out / "n1").mkdir(parents=True, exist_ok=True)
        rows = [{"id": f"{split}{i}:0", "text": d["source_sentences"][0], "sentences": d["source_sentences"][:1]}
                for i, d in enumerate(make_docs(n, seed))]
        (out / "n1" / f"{split}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (out / "stats.json").write_text(json.dumps({
        "source": "synthetic", "stand_in": "synthetic sentences (stand-in for C4 RealNewsLike)",
        "counts": {"1": {"train": 16, "dev": 4, "mean_words": 4.5, "dropped_long": 0, "dropped_tail": 0}}}))


def write_rr(out: Path, n_tasks: int = 24, candidates: int = 4) -> None:
    """build_rr's layout: ``docs.tsv`` + ``tasks.jsonl`` (query, candidates, answer index)."""
    from stages.corpora.nugget_data import Task, write_dataset

    rng = random.Random(0)
    docs, tasks = [], []
    for i in range(n_tasks):
        topic = rng.sample(WORDS, 3)
        docs.append((f"L{i}", " ".join(topic)))
        docs.append((f"R{i}", " ".join(topic + rng.sample(WORDS, 4))))
    for i in range(n_tasks):
        others = [f"R{j}" for j in rng.sample([j for j in range(n_tasks) if j != i], candidates - 1)]
        answer = rng.randrange(candidates)
        tasks.append(Task(f"L{i}", tuple(others[:answer] + [f"R{i}"] + others[answer:]), answer))
    write_dataset(out, docs, tasks)


@pytest.fixture(scope="module")
def re_inputs(tmp_path_factory):
    from transformers import AutoTokenizer

    from stages.nugget.artifacts.models import TrainedNugget

    root = tmp_path_factory.mktemp("re")
    _, tok_dir = make_mt_artifacts(root)
    tok = AutoTokenizer.from_pretrained(tok_dir)
    train = root / "train_nugget"
    _nugget(tok, 0.25, 1, 9, train / "model")
    TrainedNugget(train / "model", "ae", 0.25, 1, "topk", True, dev_loss=3.0).write(train)
    write_texts(root / "texts")
    (root / "rr").mkdir()
    write_rr(root / "rr")
    return root, {"train_nugget": artifact("train_nugget", train),
                  "build_re_data": artifact("build_re_data", root / "texts"), "build_rr": artifact("build_rr", root / "rr")}


def run_stage(stage_cls, inputs, out):
    from stages.framework.tracking import Tracker

    tracker = Tracker(f"sqlite:///{out.parent}/mlflow.db", "re-test", str(out.parent / "mlartifacts"))
    logger = tracker.start_run(stage_cls.name, {})
    ctx = dataclasses.replace(context(stage_cls, inputs, out, SMALL), logger=logger)
    stage_cls().run(ctx)
    return ctx


@pytest.fixture(scope="module")
def trained_re(ray_local, re_inputs):
    from stages.restorable.train_re import TrainRE

    root, inputs = re_inputs
    run_stage(TrainRE, inputs, root / "train_re")
    return root, {**inputs, "train_re": artifact("train_re", root / "train_re")}


def test_train_re_trains_the_grid_from_the_ae_model(trained_re):
    from nugget_core.restorable import RestorableModel

    root, _ = trained_re
    trained = TrainedRestorable.read(root / "train_re")
    assert [r["system"] for r in trained.systems] == ["n1_d_mean_input", "n1_d_mean_cross", "n1_d_mean_gating"]
    d = trained.find(config="d", decoder="gating")[0]
    assert d["freeze_pretrained"] and d["extra_layers"] == 1 and d["paper_row"] == "1|d|mean|gating"
    assert "train_nugget's AE model" in d["base"] and d["max_tokens"] > 0
    for record in trained.systems:
        assert math.isfinite(record["dev_loss"])
        model = RestorableModel.from_pretrained(trained.model_dir(record))
        assert (model.config.decoder, model.config.pooling) == (record["decoder"], record["pooling"])
        assert (trained.model_dir(record) / "README.md").is_file()  # the model card


def test_eval_re_restoration_scores_every_system(trained_re, tmp_path):
    from stages.artifacts.evaluate import EvalTable
    from stages.restorable.eval_re_restoration import EvalRERestoration

    root, inputs = trained_re
    ctx = context(EvalRERestoration, {k: inputs[k] for k in ("build_re_data", "train_re")}, tmp_path / "eval", SMALL)
    EvalRERestoration().run(ctx)
    table = EvalTable.read(tmp_path / "eval", "eval_re_restoration")
    assert {r.paper_row for r in table.rows} == {f"1|d|mean|{d}" for d in ("input", "cross", "gating")}
    for row in table.rows:
        assert row.n == 3 and row.metrics["ppl"] > 1 and row.metrics["n_ppl"] > 3 and 1 <= row.metrics["distinct"] <= 3
        assert all(0 <= row.metrics[m] <= 100 for m in ("rouge1", "rouge2", "rougeL"))
        # the unit is the document a text was cut from, the same ids for every system; 3 are too few for an interval
        assert {m: (u.unit, u.ids) for m, u in row.units.items()} == {
            m: ("document", ("dev0", "dev1", "dev2")) for m in ("ppl", "rouge1", "rouge2", "rougeL")}
        assert row.stderr == {} and row.interval == {} and row.ignores_input == ""
        assert row.units["ppl"].value() == pytest.approx(row.metrics["ppl"])
    # the floors of the 1-sentence texts: the best constant restoration's ROUGE, a trigram LM's PPL
    assert set(table.floors) == {"n1/ppl", "n1/rouge1", "n1/rouge2", "n1/rougeL"}
    assert "16 train texts" in table.floors["n1/ppl"].what and ctx.logger.metrics["floor/n1/ppl"] > 1
    assert "stand-in for C4" in table.stand_in
    lines = (tmp_path / "eval" / "examples.jsonl").read_text().splitlines()
    assert len(lines) == 9 and {"encoded", "target", "output", "rougeL", "ppl", "loss", "tokens", "sentences",
                                "empty_output"} <= set(json.loads(lines[0]))
    samples = [json.loads(x) for x in lines]
    assert [(s["system"], s["id"]) for s in samples] == [(r.system, i) for r in table.rows for i in range(3)]
    assert all(s["target"] and isinstance(s["output"], str) and s["ppl"] > 1 for s in samples)
    assert len(ctx.logger.tables["tables/examples.json"]["output"]) == 9
    assert ctx.logger.metrics[f"{table.rows[0].system}/n"] == 3


def test_build_re_retrieval_splits_the_rr_tasks_by_query(re_inputs, tmp_path):
    from stages.restorable.build_re_retrieval import BuildRERetrieval, heldout

    root, inputs = re_inputs
    BuildRERetrieval().run(context(BuildRERetrieval, {"build_rr": inputs["build_rr"]}, tmp_path / "data", SMALL))
    data = RetrievalData.read(tmp_path / "data")
    train, dev, test = (list(data.rows(s)) for s in ("train", "dev", "test"))
    assert len(train) + len(dev) + len(test) == 24 and test and dev
    assert [data.count(s) for s in ("train", "dev", "test")] == [len(train), len(dev), len(test)]
    assert all(heldout(t["id"], 0, 0.5) for t in test) and all(t["positive_ids"][0][0] == "R" for t in test)
    assert all(len(r["negatives"]) == 3 and r["positive"] not in r["negatives"] for r in train)
    assert data.match == "id" and len(list(data.passage_lines())) == 24  # every passage any task offers
    assert "stand-in for Natural Questions" in data.stand_in
    # the bi-encoder task reads its rows from the artifact in each worker (it holds no copy)
    from stages.restorable.restoration_task import RestorableBase
    from stages.restorable.retrieval_task import RetrievalTask

    task = RetrievalTask(RestorableBase("stage_ae", "m"), {}, init="", data=data, dev_examples=1)
    examples = task.load_split("train")
    assert [(e.query, e.positive, list(e.negatives)) for e in examples] == [
        (r["query"], r["positive"], r["negatives"]) for r in train]
    assert len(task.load_split("dev")) == 1


def test_retrieval_stages_train_bi_encoders_and_search_all_passages(trained_re, tmp_path):
    from stages.artifacts.evaluate import EvalTable
    from stages.restorable.build_re_retrieval import BuildRERetrieval
    from stages.restorable.eval_re_retrieval import EvalRERetrieval
    from stages.restorable.train_re_retrieval import TrainRERetrieval

    root, inputs = trained_re
    BuildRERetrieval().run(context(BuildRERetrieval, {"build_rr": inputs["build_rr"]}, tmp_path / "data", SMALL))
    data = artifact("build_re_retrieval", tmp_path / "data")
    run_stage(TrainRERetrieval, {**inputs, "build_re_retrieval": data}, tmp_path / "train")
    trained = TrainedRetrieval.read(tmp_path / "train")
    assert [(r["system"], r["paper_row"]) for r in trained.systems] == [
        ("pretrained_1", "pretrained|1"), ("freeze_n1_d", "freeze|1|1")]
    query, passage = trained.towers(trained.systems[1])
    assert any(not (a == b).all() for a, b in zip(query.state_dict().values(), passage.state_dict().values(),
                                                   strict=True))  # two towers, trained apart
    ctx = context(EvalRERetrieval, {"train_re_retrieval": artifact("train_re_retrieval", tmp_path / "train"),
                                    "build_re_retrieval": data}, tmp_path / "eval", SMALL + ["eval.re.recall_at=[1,5,100]"])
    EvalRERetrieval().run(ctx)
    table = EvalTable.read(tmp_path / "eval", "eval_re_retrieval")
    for row in table.rows:
        assert row.metrics["passages"] == 24
        assert set(row.metrics) == {"r@1", "r@5", "mrr", "passages"}  # R@100 > 24 passages: not measured
        assert row.metrics["r@1"] <= row.metrics["r@5"] and 0 <= row.metrics["mrr"] <= 100
        assert row.stderr == {} and {"r@1", "r@5"} <= set(row.interval)  # recall: a share of queries (Wilson)
        tests = [t["id"] for t in RetrievalData.read(tmp_path / "data").rows("test")]
        assert {m: (u.unit, u.ids) for m, u in row.units.items()} == {
            m: ("query", tuple(tests)) for m in ("r@1", "r@5", "mrr")}  # every bi-encoder's: paired over queries
    # a random ranking of the 24 passages: R@k = k / 24
    assert table.floors["r@5"].value == pytest.approx(500 / 24) and "24 passages" in table.floors["mrr"].what
    samples = [json.loads(x) for x in (tmp_path / "eval" / "examples.jsonl").read_text().splitlines()]
    queries = len(samples) // len(table.rows)
    assert queries > 0 and [s["system"] for s in samples] == [r.system for r in table.rows for _ in range(queries)]
    assert all(s["query"] and s["top_hits"] and len(s["retrieved"]) == 24 and "hit@5" in s for s in samples)
    assert len(ctx.logger.tables["tables/examples.json"]["query"]) == len(samples)


def test_restoration_rows_hold_the_encoded_text_original_restoration_and_scores():
    import math

    from stages.restorable.eval_re_restoration import restoration_samples
    from tests.lm_eval.fixtures import make_tokenizer

    tok = make_tokenizer()
    texts = ["the river runs to the sea", "a short one"]
    rows = restoration_samples({"system": "n1_d_mean_input", "sentences": 1, "decoder": "input"}, tok, texts, 3,
                               [3.0, 2.0], [3, 2], ["the river", ""], [{"rougeL": 50.0}, {"rougeL": 0.0}])
    assert [(r["id"], r["system"], r["sentences"], r["decoder"]) for r in rows] == [
        (0, "n1_d_mean_input", 1, "input"), (1, "n1_d_mean_input", 1, "input")]
    # the encoder read the text truncated to 3 tokens (as in training); the target is the whole text
    assert rows[0]["encoded"] and texts[0].startswith(rows[0]["encoded"]) and rows[0]["encoded"] != texts[0]
    assert rows[1]["encoded"] and rows[0]["target"] == texts[0]
    assert (rows[0]["output"], rows[0]["loss"], rows[0]["ppl"], rows[0]["tokens"]) == ("the river", 1.0, math.e, 3)
    assert rows[1]["empty_output"] is True and rows[1]["rougeL"] == 0.0


def test_search_is_exact_across_chunks():
    import torch

    from stages.restorable.artifacts import Passage
    from stages.restorable.eval_re_retrieval import search

    torch.manual_seed(0)
    vectors = torch.randn(11, 4)
    queries = torch.randn(3, 4)
    lines = [Passage(f"p{i}", str(i), "") for i in range(11)]
    top, n = search(queries, iter(lines), lambda texts: vectors[[int(t) for t in texts]], k=5, chunk_size=3)
    assert n == 11 and torch.equal(top, (queries @ vectors.T).topk(5, dim=1).indices)


def test_dpr_hit_rule_matches_answer_words():
    from stages.restorable.eval_re_retrieval import has_answer, retrieval_row

    assert has_answer("The Eiffel Tower, in Paris (France).", ["paris"])
    assert has_answer("born in 1889 in Paris", ["Paris", "Lyon"]) and not has_answer("Parisian life", ["Paris"])
    queries = ["q0", "q1", "q2", "q3"]
    row = retrieval_row({"system": "s", "paper_row": "grad|1|0"}, [1, 2, 0, 4], 50, [1, 5, 100], queries)
    assert row.metrics == {"r@1": 25.0, "r@5": 75.0, "mrr": 43.75, "passages": 50}
    # recall@k is a share of queries: its Wilson interval (never ± 0 at 0 or n of n); MRR: none from 4 queries
    assert row.interval["r@1"] == pytest.approx(share_interval(25.0, 4)) and "mrr" not in row.interval
    assert retrieval_row({"system": "s", "paper_row": "p"}, [0, 0, 0], 50, [1], queries[:3]).interval["r@1"][1] > 0
    assert row.flag == ""
    # the same first-ranked passage for most queries: uninformative
    same = retrieval_row({"system": "s", "paper_row": "p"}, [1, 0, 0, 0], 50, [1], queries, top1=[7, 7, 7, 3])
    assert same.flag == "first-ranked passage: constant output: 7 for 3 of 4 inputs"


def test_dpr_hit_rule_keeps_punctuation_and_accents_as_dpr_tokenises():
    """DPR's SimpleTokenizer: punctuation is a token of its own (one per character), NFD
    keeps accents as combining marks, matching is uncased."""
    from stages.restorable.eval_re_retrieval import dpr_tokens, has_answer

    assert dpr_tokens("AT&T's U.S. office") == ["at", "&", "t", "'", "s", "u", ".", "s", ".", "office"]
    assert not has_answer("the AT T building", ["AT&T"]) and has_answer("the at&t building", ["AT&T"])
    assert not has_answer("AT&T", ["AT T"])
    assert has_answer("the U.S. army", ["U.S."]) and not has_answer("the US army", ["U.S."])
    assert has_answer("Les Misérables", ["LES MISÉRABLES"])  # uncased, accents kept
    assert has_answer("Les Mise\u0301rables", ["Les Misérables"])  # composed or not: NFD on both sides
    assert not has_answer("Les Miserables", ["Les Misérables"]) and not has_answer("Les Misérables", ["Miserables"])
    assert not has_answer("a play", [""])  # no tokens: no hit


def test_the_grid_beyond_one_sentence_can_keep_only_table_3s_rows():
    from stages.config import load_config
    from stages.restorable.train_re import re_systems

    grid = ["train.re.configs=[a,b,c,d]", "train.re.poolings=[cls,mean]", "train.re.sentence_counts=[1,3,5]"]
    full = re_systems(load_config([*grid, "train.re.beyond_one_sentence=all"]).train.re)
    assert len(full) == 72 and len({r["system"] for r in full}) == 72
    cut = re_systems(load_config([*grid, "train.re.beyond_one_sentence=table3"]).train.re)
    assert len(cut) == 24 + 2 * 4
    assert {r["paper_row"] for r in cut if r["sentences"] == 3} == {
        f"3|{c}|mean|{d}" for c in "cd" for d in ("cross", "gating")}
    assert [r for r in cut if r["sentences"] == 1] == [r for r in full if r["sentences"] == 1]
    # profile=tiny: configurations a / d, mean pooling, table 3's rows of d on 3 sentences
    tiny = re_systems(load_config([]).train.re)
    assert len(tiny) == 8 and {r["paper_row"] for r in tiny if r["sentences"] > 1} == {
        "3|d|mean|cross", "3|d|mean|gating"}


def test_restoration_task_starts_from_a_local_pretrained_t5(re_inputs, tmp_path):
    """model.re.source=pretrained (profile=paper: t5-small) through the task, from a local folder."""
    from transformers import AutoTokenizer, T5Config, T5ForConditionalGeneration

    from stages.restorable.artifacts import RestorationTexts
    from stages.restorable.restoration_task import RestorableBase, RestorationTask

    root, _ = re_inputs
    tok = AutoTokenizer.from_pretrained(root / "tokenizer")
    t5 = T5ForConditionalGeneration(T5Config(
        vocab_size=len(tok), d_model=16, d_kv=8, d_ff=32, num_layers=1, num_decoder_layers=1, num_heads=2,
        pad_token_id=tok.pad_token_id, eos_token_id=tok.eos_token_id, decoder_start_token_id=tok.pad_token_id))
    t5.save_pretrained(tmp_path / "t5")
    tok.save_pretrained(tmp_path / "t5")
    task = RestorationTask(
        base=RestorableBase("pretrained", str(tmp_path / "t5")),
        restorable={"pooling": "cls", "decoder": "gating", "extra_layers": 1, "freeze_pretrained": True},
        data=RestorationTexts.read(root / "texts"), sentences=1)
    assert task.limit() == 511  # T5: no position limit of its own, the paper's 512 (one for [CLS])
    model = task.build_model(None)
    batch = task.collate(task.load_split("dev"), -1, 0, False)
    loss = model(**batch).loss
    loss.backward()
    assert loss.isfinite() and task.n_target_tokens(batch) == int((batch["labels"] != -100).sum())
    task.export(model, tmp_path / "out")
    again = RestorationTask(base=task.base, restorable=task.restorable, data=task.data,
                            sentences=1).build_model(tmp_path / "out")
    torch_equal = all((a == b).all() for a, b in zip(model.state_dict().values(), again.state_dict().values(),
                                                     strict=True))
    assert torch_equal and (tmp_path / "out" / "tokenizer_config.json").is_file()


def test_build_re_retrieval_reads_dprs_natural_questions_files(tmp_path):
    """source=dpr_nq (profile=paper): DPR's biencoder json, qas csv and passages tsv, in place."""
    from stages.restorable.build_re_retrieval import BuildRERetrieval
    from stages.restorable.eval_re_retrieval import first_hits, retrieval_samples, top_passages

    ctx_of = lambda q, title, text: {"title": title, "text": text, "passage_id": q}  # noqa: E731
    biencoder = [{"question": "who wrote hamlet", "answers": ["Shakespeare"],
                  "positive_ctxs": [ctx_of("1", "Hamlet", "a tragedy by William Shakespeare")],
                  "hard_negative_ctxs": [ctx_of("2", "Macbeth", "a play")]},
                 {"question": "no negatives here", "answers": ["x"], "positive_ctxs": [ctx_of("1", "", "x")],
                  "hard_negative_ctxs": []}]
    for name in ("train.json", "dev.json"):
        (tmp_path / name).write_text(json.dumps(biencoder))
    (tmp_path / "test.csv").write_text('who wrote hamlet\t["Shakespeare", "W. Shakespeare"]\n')
    (tmp_path / "psgs.tsv").write_text("id\ttext\ttitle\n1\ta tragedy by William Shakespeare\tHamlet\n"
                                       "2\ta play\tMacbeth\n")
    files = [f"data.re_retrieval.{k}={tmp_path / v}" for k, v in (
        ("nq_train_file", "train.json"), ("nq_dev_file", "dev.json"), ("nq_test_file", "test.csv"),
        ("passages_file", "psgs.tsv"))]
    (tmp_path / "rr").mkdir()  # its upstream, always built in the DAG (its tasks are not used with dpr_nq)
    write_rr(tmp_path / "rr")
    rr = {"build_rr": artifact("build_rr", tmp_path / "rr")}
    BuildRERetrieval().run(context(BuildRERetrieval, rr, tmp_path / "out", ["data.re_retrieval.source=dpr_nq", *files]))
    data = RetrievalData.read(tmp_path / "out")
    assert data.match == "answer" and data.passages == tmp_path / "psgs.tsv" and data.stand_in == ""
    (train,) = data.rows("train")  # the question without a hard negative is skipped, as DPR's trainer does
    assert train == {"query": "who wrote hamlet", "positive": "Hamlet. a tragedy by William Shakespeare",
                     "negatives": ["Macbeth. a play"]}
    (test,) = data.rows("test")
    assert test["answers"] == ["Shakespeare", "W. Shakespeare"]
    passages = list(data.passage_lines())
    assert passages == [("1", "a tragedy by William Shakespeare", "Hamlet"), ("2", "a play", "Macbeth")]
    assert [p.encoded for p in passages] == ["Hamlet. a tragedy by William Shakespeare", "Macbeth. a play"]
    import torch

    assert first_hits(torch.tensor([[1, 0]]), [test], data) == [2]  # the Hamlet passage, ranked second
    # DPR searches the passage's text only: an answer in a title alone is no hit
    assert first_hits(torch.tensor([[1, 0]]), [{**test, "answers": ["Macbeth", "Hamlet"]}], data) == [0]
    # its sample row: the query, the passages retrieved (text and hit), the answers, the first hit's rank
    top = torch.tensor([[1, 0]])
    (row,) = retrieval_samples({"system": "bi", "paper_row": "x"}, [test], top, top_passages(top, data), [2], [1, 2],
                               data)
    assert (row["id"], row["system"], row["query"], row["target"]) == (test["id"], "bi", "who wrote hamlet",
                                                                       ["Shakespeare", "W. Shakespeare"])
    assert row["output"] == "a play" and row["retrieved"] == ["2", "1"] and row["empty_output"] is None
    assert [(h["rank"], h["title"], h["hit"]) for h in row["top_hits"]] == [(1, "Macbeth", False), (2, "Hamlet", True)]
    assert (row["first_hit_rank"], row["reciprocal_rank_x100"], row["hit@1"], row["hit@2"]) == (2, 50.0, False, True)


def test_retrieval_towers_train_whole_also_from_a_frozen_encoder_and_on_resume(re_inputs, tmp_path):
    from transformers import AutoTokenizer

    from nugget_core import TinyBartSpec, build_tiny_bart
    from nugget_core.restorable import RestorableConfig, get_restorable_model
    from stages.restorable.restoration_task import RestorableBase
    from stages.restorable.retrieval_task import RetrievalExample, RetrievalTask

    root, _ = re_inputs
    tok = AutoTokenizer.from_pretrained(root / "tokenizer")
    frozen = get_restorable_model(build_tiny_bart(tok, TinyBartSpec(d_model=16, layers=1, ffn_dim=32)),
                                  RestorableConfig(pooling="mean", decoder="gating", extra_layers=1,
                                                   freeze_pretrained=True))
    assert not all(p.requires_grad for p in frozen.encoder.parameters())
    frozen.save_pretrained(tmp_path / "d")
    tok.save_pretrained(tmp_path / "d")
    rows = [RetrievalExample("the cat", "the cat sat", ("a dog ran",))] * 2
    task = RetrievalTask(base=RestorableBase("pretrained", str(tmp_path / "d")), restorable={}, init=str(tmp_path / "d"),
                         data=None)  # load_split is not called here
    model = task.build_model(None)
    assert all(p.requires_grad for p in model.parameters())
    model(**task.collate(rows, 0, 0, True)).loss.backward()
    task.export(model, tmp_path / "out")
    resumed = task.build_model(tmp_path / "out")
    assert all(p.requires_grad for p in resumed.parameters())  # the saved config still says frozen
    assert all((a == b).all() for a, b in zip(model.state_dict().values(), resumed.state_dict().values(), strict=True))


def test_restoration_never_decodes_past_the_training_truncation():
    """The longest reference + eval.re.extra_tokens is capped at the texts' truncation (positions - 1):
    beyond it a BART decoder runs off its position table (IndexError on profile=small's 128 positions)."""
    from types import SimpleNamespace

    import torch

    from stages.restorable.eval_re_restoration import restore
    from tests.lm_eval.fixtures import make_tokenizer

    asked: list[int] = []

    class Fake:
        def __call__(self, input_ids, attention_mask, labels):
            return SimpleNamespace(logits=torch.zeros(*labels.shape, len(tok)))

        def generate(self, ids, mask, num_beams, max_new_tokens):
            asked.append(max_new_tokens)
            return ids

    tok = make_tokenizer()
    restore(Fake(), tok, ["a long sentence " * 20, "short"], 12, 2, 1, 8, torch.device("cpu"))
    restore(Fake(), tok, ["tiny", "short"], 12, 2, 1, 2, torch.device("cpu"))
    assert asked[0] == 12 and asked[1] < 12


def test_passages_round_trip_in_dpr_quoting(tmp_path):
    # DPR's psgs_w100.tsv quotes every text ("" inside): the quotes are not the passage's
    (tmp_path / "psgs.tsv").write_text('id\ttext\ttitle\n1\t"Aaron ( or ; ""Aharon"") is a prophet"\tAaron\n')
    dpr = RetrievalData(tmp_path, "dpr_nq", "", "answer", tmp_path / "psgs.tsv", {})
    assert list(dpr.passage_lines()) == [("1", 'Aaron ( or ; "Aharon") is a prophet', "Aaron")]
    # the stand-in's own file: a text that opens with a quote stays one passage
    texts = [("R0", '"Quoted" opening, then\ttabbed text'), ("R1", 'plain "inner" quotes')]
    assert RetrievalData.write_passages(tmp_path, texts) == 2
    stand_in = RetrievalData(tmp_path, "rr_tasks", "", "id", tmp_path / RetrievalData.PASSAGES, {})
    assert [(p.id, p.text) for p in stand_in.passage_lines()] == [
        ("R0", '"Quoted" opening, then tabbed text'), ("R1", 'plain "inner" quotes')]
