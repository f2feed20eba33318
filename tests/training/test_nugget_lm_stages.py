"""The Nugget LM stages (Nugget table 3) on tiny fixtures: build_nugget_lm through the DAG,
train_nugget_lm on Ray Train from fixture autoencoders, eval_nugget_lm's word-level
perplexity (checked by hand on a uniform LM) and the report table it fills."""

from __future__ import annotations

import json
import math
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch

from stages.corpora.tokens import word_flags
from stages.nugget.artifacts.data import NuggetLMCorpus, TokenDocuments
from stages.nugget.artifacts.models import TrainedNuggetLM
from tests.evaluation.fixtures import artifact, context, stored_table
from tests.training.fixtures import make_docs

pytestmark = pytest.mark.ray

SMALL = ["train.nugget_lm.segment_tokens=8", "train.nugget_lm.histories=[1,2]", "train.nugget_lm.max_steps=3",
         "train.nugget_lm.batch_size=4", "train.nugget_lm.eval_every=3", "train.nugget_lm.checkpoint_every=3",
         "train.nugget_lm.dev_examples=8", "train.nugget_lm.lr=1e-3", "train.nugget_lm.compressive_chunk=4",
         "eval.nugget_lm.stride=4", "eval.nugget_lm.histories=[1,2]", "eval.nugget_lm.batch_size=8",
         "eval.nugget_lm.max_doc_tokens=40"]


def write_corpus(out: Path, tok_dir: Path, test_articles: int = 3) -> NuggetLMCorpus:
    """A `NuggetLMCorpus` of synthetic articles (each ~4 sentences-worth documents joined)."""
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tok_dir)
    out.mkdir(parents=True)
    for split, (n, seed) in {"train": (12, 1), "dev": (3, 2), "test": (test_articles, 3)}.items():
        texts = [" ".join(r["source"] for r in make_docs(6, seed * 100 + i)) for i in range(n)]
        rows = []
        for text in texts:
            enc = tok(text, add_special_tokens=False, return_offsets_mapping=True)
            starts, oov = word_flags(text, enc["offset_mapping"], enc["input_ids"], tok.unk_token_id)
            rows.append({"ids": enc["input_ids"], "word_start": starts, "oov": oov})
        pq.write_table(pa.Table.from_pylist(rows), NuggetLMCorpus.split_file(out, split))
    (out / "stats.json").write_text(json.dumps({"source": "synthetic", "stand_in": "synthetic test articles"}))
    return NuggetLMCorpus.read(out)


@pytest.fixture(scope="module")
def lm_inputs(tmp_path_factory):
    """tokenizer, build_nugget_lm, train_nugget (AE), train_baselines (tsdae_ae) artifacts."""
    from transformers import AutoTokenizer

    from nugget_core import TinyBartSpec, build_tiny_bart
    from nugget_core.baselines import get_bottleneck_model
    from stages.nugget.artifacts.models import TrainedBaselines, TrainedNugget
    from tests.evaluation.fixtures import _nugget
    from tests.training.fixtures import make_mt_artifacts

    root = tmp_path_factory.mktemp("nugget-lm")
    _, tok_dir = make_mt_artifacts(root)
    tok = AutoTokenizer.from_pretrained(tok_dir)
    write_corpus(root / "corpus", tok_dir)
    train = root / "train_nugget"
    _nugget(tok, 0.25, 1, 9, train / "model")
    TrainedNugget(train / "model", "ae", 0.25, 1, "topk", True, dev_loss=3.0).write(train)
    base = root / "baselines"
    tsdae = get_bottleneck_model(build_tiny_bart(tok, TinyBartSpec(d_model=32, layers=2, ffn_dim=64)))
    tsdae.save_pretrained(base / "systems" / "tsdae_ae" / "model")
    TrainedBaselines(base, [{"system": "tsdae_ae", "kind": "bottleneck", "decoder": "cross", "objective": "ae",
                             "model_dir": "systems/tsdae_ae/model"}]).write(base)
    tok_art = root / "tokenizer_stage"
    tok.save_pretrained(tok_art / "tokenizer")
    return root, {"tokenizer": artifact("tokenizer", tok_art), "build_nugget_lm": artifact("build_nugget_lm", root / "corpus"),
                  "train_nugget": artifact("train_nugget", train), "train_baselines": artifact("train_baselines", base)}


@pytest.fixture(scope="module")
def trained_lm(ray_local, lm_inputs):
    import dataclasses

    from stages.framework.tracking import Tracker
    from stages.nugget.train_nugget_lm import TrainNuggetLM
    from stages.training.model_card import mlflow_model_name

    root, inputs = lm_inputs
    tracker = Tracker(f"sqlite:///{root}/mlflow.db", "nugget-lm-test", str(root / "mlartifacts"))
    logger = tracker.start_run("train_nugget_lm", {})  # the Ray Train workers log into it
    ctx = dataclasses.replace(context(TrainNuggetLM, inputs, root / "train_nugget_lm", SMALL), logger=logger)
    TrainNuggetLM().run(ctx)
    experiment = tracker.client.get_run(logger.run_id).info.experiment_id  # each model an MLflow Model of the run
    models = sorted(m.name for m in tracker.client.search_logged_models([experiment]) if m.source_run_id == logger.run_id)
    assert models == sorted(mlflow_model_name(f"systems/{name}/model") for name in models_of(root / "train_nugget_lm"))
    return root, inputs, tracker.client.get_run(logger.run_id).data.metrics


def models_of(out):
    """Every exported system's name (each holds a model card beside its weights)."""
    names = [p.parent.parent.name for p in (out / "systems").glob("*/model/README.md")]
    assert len(names) == 5, names
    return names


def test_train_nugget_lm_trains_every_system_from_its_autoencoder(trained_lm):
    from nugget_core import NuggetLM

    root, _, metrics = trained_lm
    trained = TrainedNuggetLM.read(root / "train_nugget_lm")
    by_name = {r["system"]: r for r in trained.systems}
    assert list(by_name) == ["nugget_r0.05", "nugget_r0.1", "tsdae", "compressive", "transformer"]
    assert [by_name[n]["paper_row"] for n in by_name] == ["nugget_0.05", "nugget_0.1", "tsdae", "compressive", "transformer"]
    assert by_name["tsdae"]["init"] == "train_baselines (tsdae_ae)"
    assert by_name["transformer"]["histories"] == [] and by_name["nugget_r0.1"]["histories"] == [1, 2]
    for record in trained.systems:
        assert math.isfinite(record["dev_loss"])
        assert metrics[f"{record['system']}.steps"] == 3 and f"{record['system']}.train/loss" in metrics
        # loads outside Ray, with the memory it trained
        lm = NuggetLM.from_pretrained(trained.path / record["model_dir"])
        assert lm.config.memory == record["memory"]
    assert NuggetLM.from_pretrained(trained.path / by_name["nugget_r0.05"]["model_dir"]).config.ratio == 0.05


def test_eval_nugget_lm_fills_table_3_and_the_report(trained_lm, tmp_path):
    from stages.artifacts.evaluate import EvalTable
    from stages.nugget.eval_nugget_lm import FLOOR_ROW, EvalNuggetLM
    from stages.report.tables import eval_table

    root, inputs, _ = trained_lm
    ctx = context(EvalNuggetLM, {"build_nugget_lm": inputs["build_nugget_lm"],
                                 "train_nugget_lm": artifact("train_nugget_lm", root / "train_nugget_lm")},
                  tmp_path / "eval", SMALL)
    EvalNuggetLM().run(ctx)
    table = EvalTable.read(tmp_path / "eval", "eval_nugget_lm")
    systems = [r for r in table.rows if r.system != FLOOR_ROW]  # and the Kneser-Ney floor's row (its own test)
    assert [r.system for r in table.rows if r.system == FLOOR_ROW] == [FLOOR_ROW]
    rows = {r.paper_row: r for r in systems}
    assert set(rows) == {"nugget_0.05", "nugget_0.1", "tsdae", "compressive", "transformer"}
    assert set(rows["transformer"].metrics) >= {"ppl_h0", "subword_ppl_h0", "n_ppl_h0"}
    assert "ppl_h1" not in rows["transformer"].metrics and "ppl_h0" not in rows["tsdae"].metrics
    for row in systems:
        assert all(math.isfinite(v) and v > 1 for k, v in row.metrics.items() if "ppl" in k and not k.startswith("n_"))
        assert row.n > 0
        # each perplexity with its sums per article (the unit); 3 articles are too few for an interval (MIN_UNITS;
        # tests/training/test_eval_nugget_lm_units.py: 16 articles)
        assert set(row.units) == {k for k in row.metrics if k.startswith(("ppl_h", "subword_ppl_h"))}
        assert all(u.unit == "article" and u.n == 3 for u in row.units.values()) and row.interval == {}
    assert ctx.logger.metrics["nugget_r0.1/ppl_h2"] == rows["nugget_0.1"].metrics["ppl_h2"]
    assert "nugget_r0.1/ppl_h2_low" not in ctx.logger.metrics
    assert ctx.logger.metrics["nugget_r0.1/n"] == rows["nugget_0.1"].n
    report = eval_table("nugget_table3", "T3", stored_table("eval_nugget_lm", tmp_path / "eval"),
                        {f"h={h}": f"ppl_h{h}" for h in (0, 1, 2, 4, 8)}, "ctx")
    cells = {row[0]: row for row in report.cells()}
    # a system above the unigram model of the train split (the fixture's barely trained LMs) is flagged
    for row in systems:
        above = any(v > row.metrics["unigram_ppl"] for k, v in row.metrics.items() if k.startswith("ppl_h"))
        assert bool(row.flag) == above, (row.system, row.metrics, row.flag)
        measured = [c for c in cells[row.system][1::2] if c != "not run in this profile"]
        assert measured and all(c.endswith(" [uninformative]") == above for c in measured)
    assert len({r.metrics["unigram_ppl"] for r in systems}) == 1  # one reference for one tokenizer
    assert FLOOR_ROW in cells and set(table.floors) >= {"ppl_h0", "ppl_h1", "ppl_h2"}
    assert cells["transformer"][1].removesuffix(" [uninformative]").endswith(f"(n={rows['transformer'].n})")
    assert cells["transformer"][2] == 31.46
    assert cells["nugget_r0.05"][3] != "not run in this profile" and cells["nugget_r0.05"][7] == "not run in this profile"
    assert cells["nugget_r0.05"][4] == 29.88  # h=1, published
    assert "synthetic test articles" in report.heading
    # every article as each system read it at each h: the text scored and its perplexity
    samples = [json.loads(x) for x in (tmp_path / "eval" / "examples.jsonl").read_text().splitlines()]
    runs = sum(1 if r.paper_row == "transformer" else 2 for r in systems)  # h = 0, or h = 1 and 2
    assert len(samples) == runs * 3 and len(ctx.logger.tables["tables/examples.json"]["target"]) == len(samples)
    assert all(s["target"] and s["output"] is None and s["word_ppl"] > 1 and s["tokens"] > 0 for s in samples)


class UniformLM:
    """Zero logits over ``vocab``: every token has probability 1 / vocab."""

    device = torch.device("cpu")

    def __init__(self, vocab: int) -> None:
        self.vocab = vocab

    def __call__(self, decoder_input_ids: torch.Tensor, **_: object) -> SimpleNamespace:
        return SimpleNamespace(logits=torch.zeros(*decoder_input_ids.shape, self.vocab))


def test_word_perplexity_is_the_product_of_subword_probabilities_without_oov():
    from stages.nugget.eval_nugget_lm import score

    # 10 tokens: words start at 0, 3, 5, 8; the word at 5-7 is out of vocabulary
    starts = np.array([1, 0, 0, 1, 0, 1, 0, 0, 1, 0], dtype=bool)
    oov = np.array([0, 0, 0, 0, 0, 1, 1, 1, 0, 0], dtype=bool)
    docs = TokenDocuments(np.arange(10) + 3, starts, oov, np.array([0, 10]))
    (tally,) = score(UniformLM(50), docs, [10], segment=4, stride=2, history=1, batch_size=3,
                     wrap=lambda s: [0, *s, 2], start_id=2, pad_id=1)
    assert (tally.subwords, tally.words, tally.oov_words) == (7, 3, 1)  # each token scored once
    assert tally.subword_ppl == pytest.approx(50.0)
    assert tally.word_ppl == pytest.approx(50.0 ** (7 / 3))


def test_word_flags_mark_word_starts_and_unknown_words():
    text = "The cat <unk> sat ,\n on"
    # byte-level pieces: "The", " ca", "t", " <unk", ">", " sat", " ,", "\n", " on"
    ids = [5, 6, 7, 6, 8, 9, 10, 11, 12]
    offsets = [(0, 3), (3, 6), (6, 7), (7, 12), (12, 13), (13, 17), (17, 19), (19, 20), (20, 23)]
    starts, oov = word_flags(text, offsets, ids, unk_id=None)
    assert starts == [True, True, False, True, False, True, True, True, False]  # "\n" begins "\n on"
    assert oov == [False, False, False, True, True, False, False, False, False]
    starts, oov = word_flags(text, offsets, ids, unk_id=9)  # "sat" holds the unknown token
    assert oov[5] and not oov[6]
