"""The evaluation recipes (stages/nugget2d/lm/qa.py, summarization.py, language_modelling.py)
on a tiny random LLaMA, outside any stage, Ray or MLflow: each row is the scoring of the
systems' own decoding, the callbacks are used as documented, and bad input is refused."""

from __future__ import annotations

import pytest

from nugget_core.nugget2d.prompts import PromptFormat
from stages.nugget2d.config import LMContextSetting, LMEval, QAEval, SummarizationEval
from stages.nugget2d.lm.qa import RatioModel, evaluate_qa
from stages.nugget2d.lm.summarization import evaluate_summarization
from tests.lm_eval.fixtures import TEXTS, make_base_lm, make_nugget2d

RECORDS = [{"id": f"r{i}", "document": TEXTS[i], "instruction": "Fill in the blank: the _____",
            "answer": "river", "answers": ["river"]} for i in range(3)]
TIME = ("ms_per_token", "encode_ms")


def _untimed(metrics: dict) -> dict:
    return {k: v for k, v in metrics.items() if k not in TIME}


def test_qa_recipe_scores_each_systems_decoding(model, tokenizer):
    from stages.common.prompts import encode_task_records
    from stages.nugget2d.lm.prompted import run_batches
    from stages.nugget2d.lm.scoring import score_qa

    fmt = PromptFormat("inst")
    section = QAEval(systems=["full", "nodoc", "nugget2d", "key_norm"], nugget_ratios=[0.5, 0.25], batch_size=2,
                     max_new_tokens=3)
    other = make_nugget2d(make_base_lm(len(tokenizer)), seed=1)
    asked = []

    def at_ratio(r: float) -> RatioModel:  # its own model at 0.25 only, as train_nugget2d's variants
        asked.append(r)
        return RatioModel(other, 0.25) if r == 0.25 else RatioModel(model, None)

    result = evaluate_qa(model, tokenizer, RECORDS, section, prompt_format=fmt, at_ratio=at_ratio, compressor="mine")
    rows = {r.system: r for r in result.table.rows}
    assert list(rows) == ["full", "nodoc", "nugget2d 2x", "nugget2d 4x", "key_norm 2x", "key_norm 4x"]
    assert [rows[s].paper_row for s in rows] == ["full", "nodoc", "nugget2d_2x", "nugget2d_4x", "key_norm_2x",
                                                  "key_norm_4x"]
    assert asked == [0.5, 0.25] and all(r.n == 3 for r in rows.values())
    # every system on the same questions' documents (what pairs two of them); the floor: NoDoc's accuracy
    assert {r.units["accuracy"].ids for r in rows.values()} == {("r0", "r1", "r2")}
    assert result.table.floors["accuracy"].value == rows["nodoc"].metrics["accuracy"]
    assert result.table.floors["accuracy"].higher_is_better and not any(r.ignores_input for r in rows.values())
    assert [(e["system"], e["id"]) for e in result.examples[:4]] == [("full", "r0"), ("full", "r1"), ("full", "r2"),
                                                                     ("nodoc", "r0")]
    assert len(result.examples) == 6 * 3
    # the 4x row decodes with the model at_ratio gave: its scores are those of that model's answers
    docs, prompts = encode_task_records(tokenizer, RECORDS, fmt)
    gens = run_batches("x", other, tokenizer, docs, prompts, 2, _Silent(), ratio=0.25, max_new_tokens=3)
    expected = score_qa(gens, RECORDS, [len(d) for d in docs], section)
    assert _untimed(rows["nugget2d 4x"].metrics) == _untimed(expected.metrics)
    assert [e["output"] for e in result.examples if e["system"] == "nugget2d 4x"] == [g.text for g in gens]
    notes = " ".join(result.table.notes)
    assert "3 examples of split 'test'" in notes and "Nugget2D: mine (without its soft prompt)" in notes
    assert "nugget2d 2x: the model trained at r = ?; nugget2d 4x: the model trained at r = 0.25" in notes
    assert "key_norm: training-free KV presses" in notes
    with pytest.raises(ValueError, match="no records"):
        evaluate_qa(model, tokenizer, [], section, prompt_format=fmt)


def test_summarization_recipe_loads_full_ft_only_for_its_row(model, tokenizer):
    fmt = PromptFormat("inst")
    records = [{"id": f"s{i}", "document": TEXTS[i], "instruction": "Please summarize the above document in one "
                "sentence.", "answer": TEXTS[i + 1]} for i in range(2)]
    section = SummarizationEval(systems=["full_zs", "full_ft", "nugget2d_ft"], nugget_ratio=0.5, max_new_tokens=3)
    loaded = []

    def full_ft():
        loaded.append(1)
        return make_nugget2d(make_base_lm(len(tokenizer), seed=2))

    result = evaluate_summarization(model, tokenizer, records, section, prompt_format=fmt, full_ft=full_ft)
    assert [(r.system, r.paper_row, r.n) for r in result.table.rows] == [
        ("full_zs", "full_zs", 2), ("full_ft", "full_ft", 2), ("nugget2d_ft 2x", "nugget2d_2x", 2),
        ("lead-3 (floor)", "", 2)]
    assert loaded == [1] and len(result.examples) == 6
    assert all(0 <= r.metrics["rouge1"] <= 100 and r.units["rouge1"].ids == ("s0", "s1") for r in result.table.rows)
    # the floor: the lead-3 summary of the same documents against the same references (lead_floor)
    from stages.evaluation.task_floors import lead_floor

    documents, references = [r["document"] for r in records], [r["answer"] for r in records]
    for t in ("rouge1", "rouge2", "rougeL", "rougeLsum"):  # table 4's RL is ROUGE-Lsum
        assert result.table.floors[t].value == pytest.approx(lead_floor(documents, references, metric=t).value)
        assert result.table.floors[t].value == pytest.approx(result.table.row("lead-3 (floor)").metrics[t])
    assert result.table.rows[2].metrics["context_ratio"] < 1.0 == result.table.rows[0].metrics["context_ratio"]
    with pytest.raises(ValueError, match="no full_ft loader"):
        evaluate_summarization(model, tokenizer, records, section, prompt_format=fmt)


def test_lm_recipe_resamples_articles_and_scores_the_trigram_floor_on_the_same_tokens(model, tokenizer):
    """Three segments cut from two articles: every perplexity's unit is the article (the first two
    segments are one unit), shared by every system; the Kneser-Ney trigram model of the train text
    is scored on exactly the recent tokens the systems are, with their history as context, and is
    both the floor of every perplexity and a row; a system whose model ignores its input says so."""
    import math

    import numpy as np

    from stages.artifacts.trainer_state import InputUse
    from stages.common.degenerate import UnigramModel
    from stages.common.ngram import KneserNeyTrigram
    from stages.nugget2d.lm.language_modelling import FLOOR_ROW, evaluate_lm

    ids = tokenizer(" ".join(TEXTS[:10]), add_special_tokens=False)["input_ids"]
    segments = {"wiki": [(ids[s : s + 12], ids[s + 12 : s + 18]) for s in (0, 18, 36)]}
    documents = {"wiki": ["wiki-7", "wiki-7", "wiki-9"]}
    unigram = UnigramModel.fit([np.array(ids[40:])], len(tokenizer))
    trigram = KneserNeyTrigram.fit([ids[54:]], len(tokenizer))
    section = LMEval(corpora=["wiki"], systems=["full", "nugget2d"], baseline_adapter="none",
                     contexts=[LMContextSetting(total_states=6, compressed_tokens=10, context_tokens=3)])
    ignoring = InputUse(own=5.39, other=5.39, low=-0.01, high=0.01, n=64).reason()
    result = evaluate_lm(model, tokenizer, segments, section, threshold=0.0, ratio=0.5, unigrams={"wiki": unigram},
                         documents=documents, trigrams={"wiki": trigram}, ignores_input={"nugget2d": ignoring},
                         provenance=["where Lambda came from"], stand_in="stand-in text")
    rows = {r.system: r for r in result.table.rows}
    assert list(rows) == ["full 6/10/3", "nugget2d 6/10/3", FLOOR_ROW] and all(r.n == 2 for r in rows.values())
    assert rows["full 6/10/3"].metrics["attended_states"] == 6.0
    for row in rows.values():
        for k in ("wiki_subword_ppl", "wiki_word_ppl"):
            units = row.units[k]
            assert (units.unit, units.ids, units.statistic) == ("article", ("wiki-7", "wiki-9"), "exp_ratio")
            assert units.value() == pytest.approx(row.metrics[k]) and row.metrics[f"n_{k}"] == 2
        assert not row.interval  # 2 articles: fewer than MIN_UNITS units, no interval
    # the article of two segments sums their NLL and tokens
    per = [e for e in result.examples if e["system"] == "full"]
    first = rows["full 6/10/3"].units["wiki_subword_ppl"].stats[0]
    assert first.tolist() == pytest.approx([sum(e["loss"] * e["tokens"] for e in per[:2]), 12])
    # the floor row: the trigram's NLL of each recent token given the tokens before it in its segment
    nll = [trigram.token_nll(d + r)[len(d):] for d, r in segments["wiki"]]
    floor = rows[FLOOR_ROW]
    assert floor.metrics["wiki_subword_ppl"] == pytest.approx(math.exp(np.concatenate(nll).mean()))
    assert floor.units["wiki_subword_ppl"].stats[1].tolist() == pytest.approx([nll[2].sum(), 6])
    floors = result.table.floors
    assert set(floors) == {"wiki_subword_ppl", "wiki_word_ppl"} and not floors["wiki_subword_ppl"].higher_is_better
    assert all(floors[k].value == floor.metrics[k] for k in floors)
    assert rows["nugget2d 6/10/3"].ignores_input == ignoring and ignoring.startswith("ignores its input")
    assert rows["full 6/10/3"].ignores_input == "" == floor.ignores_input
    assert rows["full 6/10/3"].metrics["wiki_unigram_ppl"] == rows["nugget2d 6/10/3"].metrics["wiki_unigram_ppl"] > 1
    assert len(result.examples) == 3 * 2 and result.table.stand_in == "stand-in text"
    assert result.table.notes[0] == "where Lambda came from"
    assert any("3 segments (wiki: 3) cut from 2 articles" in n for n in result.table.notes)
    with pytest.raises(ValueError, match="no trained model for"):
        evaluate_lm(model, tokenizer, segments, LMEval(corpora=["wiki"], baseline_adapter="trained"), threshold=0.0,
                    ratio=0.5, unigrams={"wiki": unigram}, documents=documents)
    with pytest.raises(ValueError, match=r"corpora \['wiki'\] have no segments"):
        evaluate_lm(model, tokenizer, {}, section, threshold=0.0, ratio=0.5, unigrams={"wiki": unigram},
                    documents=documents)
    with pytest.raises(ValueError, match=r"documents: corpora \['wiki'\] do not name one document per segment"):
        evaluate_lm(model, tokenizer, segments, section, threshold=0.0, ratio=0.5, unigrams={"wiki": unigram},
                    documents={"wiki": ["wiki-7"]})
    with pytest.raises(ValueError, match=r"trigrams: no Kneser-Ney trigram model for corpora \['wiki'\]"):
        evaluate_lm(model, tokenizer, segments, section, threshold=0.0, ratio=0.5, unigrams={"wiki": unigram},
                    documents=documents, trigrams={})


class _Silent:
    def info(self, *args: object) -> None:
        pass
