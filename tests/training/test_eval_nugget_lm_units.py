"""eval_nugget_lm's units, floor and input-use check, on untrained fixture Nugget LMs (no Ray):
every perplexity resamples the articles (the windows cut from one article are one unit), the Kneser-Ney
trigram of the train split is a row of table 3 and the floor of every perplexity column, on exactly the
tokens the systems are scored on, and a system whose model ignores its history carries it."""

from __future__ import annotations

from dataclasses import replace

import pytest

from stages.artifacts.trainer_state import InputUse
from stages.common.ngram import KneserNeyTrigram
from stages.evaluation.perplexity import PerplexityCounts
from stages.nugget.artifacts.data import NuggetLMCorpus
from stages.nugget.artifacts.models import TrainedNuggetLM
from stages.nugget.eval_nugget_lm import FLOOR_ROW, EvalNuggetLM, reference_counts
from tests.evaluation.fixtures import artifact, context, stored_table, write_trainer_state
from tests.training.test_nugget_lm_stages import write_corpus

ARTICLES = 20  # test articles: enough for an interval (MIN_UNITS)
EVAL = ["eval.nugget_lm.stride=4", "eval.nugget_lm.histories=[1,2]", "eval.nugget_lm.batch_size=16",
        "eval.nugget_lm.max_doc_tokens=40", f"eval.nugget_lm.max_docs={ARTICLES}"]
# every Nugget-LM system of the tiny run ends at dev loss 5.39 whatever its history
IGNORES = InputUse(own=5.39, other=5.39, low=-0.001, high=0.001, n=64)


@pytest.fixture(scope="module")
def evaluated(tmp_path_factory):
    """build_nugget_lm (16 test articles) and train_nugget_lm's two systems, untrained: the transformer
    (no memory) and a Nugget LM (r = 0.25), each with its trainer state; eval_nugget_lm run on them with
    the Nugget LM's summary saying it ignores its history."""
    import torch
    from transformers import AutoTokenizer

    from nugget_core import NuggetConfig, TinyBartSpec, build_tiny_bart, get_nugget_model
    from nugget_core.nugget import NuggetLM, NuggetLMConfig
    from tests.training.fixtures import make_mt_artifacts

    torch.set_num_threads(1)
    root = tmp_path_factory.mktemp("nugget-lm-units")
    _, tok_dir = make_mt_artifacts(root)
    tok = AutoTokenizer.from_pretrained(tok_dir)
    corpus = write_corpus(root / "corpus", tok_dir, test_articles=ARTICLES)
    out, records = root / "train_nugget_lm", []
    for name, memory, ratio, row in (("transformer", "none", None, "transformer"), ("nugget_r0.25", "nugget", 0.25, "nugget_0.1")):
        base = build_tiny_bart(tok, TinyBartSpec(d_model=32, layers=2, ffn_dim=64), seed=3)
        model = base if memory == "none" else get_nugget_model(base, NuggetConfig(ratio=0.25, scorer_layer=1))
        folder = TrainedNuggetLM.system_dir(out, name)
        NuggetLM(model, NuggetLMConfig(memory=memory, ratio=ratio)).save_pretrained(folder / "model")
        tok.save_pretrained(folder / "model")
        write_trainer_state(folder, 5.39)
        records.append({"system": name, "memory": memory, "ratio": ratio, "paper_row": row, "segment_tokens": 8,
                        "histories": [] if memory == "none" else [1, 2], "init": "fixture",
                        "model_dir": f"systems/{name}/model", "dev_loss": 5.39})
    TrainedNuggetLM(out, records).write(out)
    original = TrainedNuggetLM.training
    patch = pytest.MonkeyPatch()
    patch.setattr(TrainedNuggetLM, "training", lambda self: [
        replace(s, input_use=IGNORES) if s.model == "train_nugget_lm/nugget_r0.25" else s for s in original(self)])
    ctx = context(EvalNuggetLM, {"build_nugget_lm": artifact("build_nugget_lm", root / "corpus"),
                                 "train_nugget_lm": artifact("train_nugget_lm", out)}, root / "eval", EVAL)
    try:
        EvalNuggetLM().run(ctx)
    finally:
        patch.undo()
    return ctx, corpus, len(tok)


def test_each_perplexity_resamples_the_articles(evaluated):
    from stages.artifacts.evaluate import EvalTable

    ctx, corpus, _ = evaluated
    table = EvalTable.read(ctx.output_dir, "eval_nugget_lm")
    docs = corpus.documents("test")
    # the words each article holds in its first 40 tokens: an article's windows (10 of them, every 4 tokens)
    # all add to its one unit
    words = [int((docs.word_start(i)[:40] & ~docs.oov(i)[:40]).sum()) for i in range(ARTICLES)]
    ids = tuple(f"test/{i}" for i in range(ARTICLES))
    for row in table.rows:
        perplexities = [k for k in row.metrics if k.startswith(("ppl_h", "subword_ppl_h"))]
        assert perplexities and set(row.units) == set(perplexities) == set(row.interval)
        for key in perplexities:
            units = row.units[key]
            assert (units.unit, units.ids, units.statistic) == ("article", ids, "exp_ratio")
            assert units.value() == pytest.approx(row.metrics[key]) and row.interval[key] == units.interval()
        for key in (k for k in perplexities if k.startswith("ppl_h")):
            assert row.units[key].stats[:, 1].tolist() == words
    assert ctx.logger.metrics["nugget_r0.25/ppl_h1_low"] == table.row("nugget_r0.25").interval["ppl_h1"][0]


def test_the_kneser_ney_floor_is_a_row_and_every_columns_floor(evaluated):
    from stages.artifacts.evaluate import EvalTable

    ctx, corpus, vocab = evaluated
    table = EvalTable.read(ctx.output_dir, "eval_nugget_lm")
    floor = table.row(FLOOR_ROW)
    docs = corpus.documents("test")
    # by hand: the trigram model of the train split's articles, on the systems' tokens (OOV excluded)
    trigram = KneserNeyTrigram.fit(list(corpus.articles("train")), vocab)
    expected = PerplexityCounts.total(reference_counts(trigram.token_nll, docs, [40] * ARTICLES))
    assert [floor.metrics[f"ppl_h{h}"] for h in (0, 1, 2)] == pytest.approx([expected.word_ppl] * 3)
    assert [floor.metrics[f"subword_ppl_h{h}"] for h in (0, 1, 2)] == pytest.approx([expected.subword_ppl] * 3)
    assert floor.n == expected.words == table.row("transformer").n  # the same tokens as the systems'
    assert set(table.floors) == {f"{kind}_h{h}" for kind in ("ppl", "subword_ppl") for h in (0, 1, 2)}
    assert all(not f.higher_is_better and f.value == floor.metrics[k] for k, f in table.floors.items())
    assert "Kneser-Ney trigram fitted on build_nugget_lm's train split" in table.floors["ppl_h0"].what
    assert ctx.logger.metrics["floor.ppl"] == table.floors["ppl_h0"].value and ctx.logger.metrics["floor.ppl_n"] == ARTICLES
    # untrained LMs (perplexity near the vocabulary's size) do not beat a trigram model
    assert not table.floors["ppl_h0"].reached_by(table.row("transformer").metrics["ppl_h0"])


def test_table3_cells_carry_units_floors_and_the_input_use_check(evaluated):
    from stages.report.tables import eval_table

    ctx, _, _ = evaluated
    t = eval_table("nugget_table3", "T3", stored_table("eval_nugget_lm", ctx.output_dir),
                   {f"h={h}": f"ppl_h{h}" for h in (0, 1, 2)}, "ctx")
    labels = [label for label, _, _ in t.rows]
    assert FLOOR_ROW in labels and "nugget_r0.25" in labels
    values = {(v.label, c): v for _, c, v in t.numbers}
    nugget = values[("nugget_r0.25", "h=1")]
    assert nugget.ignores_input == IGNORES.reason() and nugget.below_floor == IGNORES.reason()
    assert nugget.units.unit == "article" and nugget.floor.value == values[(FLOOR_ROW, "h=1")].value
    assert values[("transformer", "h=0")].ignores_input == ""
    assert any("Kneser-Ney trigram" in note for note in t.notes())


def test_articles_are_read_one_by_one(tmp_path):
    """What the trigram model counts: each article of the split on its own, the same ids as `documents`."""
    from tests.training.fixtures import make_mt_artifacts

    _, tok_dir = make_mt_artifacts(tmp_path)
    corpus = write_corpus(tmp_path / "corpus", tok_dir)
    docs = corpus.documents("train")
    articles = list(NuggetLMCorpus.read(tmp_path / "corpus").articles("train"))
    assert len(articles) == len(docs.lengths()) == 12
    assert all((a == docs[i]).all() for i, a in enumerate(articles))
