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
        ("full_zs", "full_zs", 2), ("full_ft", "full_ft", 2), ("nugget2d_ft 2x", "nugget2d_2x", 2)]
    assert loaded == [1] and len(result.examples) == 6
    assert all(0 <= r.metrics["rouge1"] <= 100 and "rouge1" in r.stderr for r in result.table.rows)
    assert result.table.rows[2].metrics["context_ratio"] < 1.0 == result.table.rows[0].metrics["context_ratio"]
    with pytest.raises(ValueError, match="no full_ft loader"):
        evaluate_summarization(model, tokenizer, records, section, prompt_format=fmt)


def test_lm_recipe_scores_segments_against_the_unigram_reference(model, tokenizer):
    import numpy as np

    from stages.common.degenerate import UnigramModel
    from stages.nugget2d.lm.language_modelling import evaluate_lm

    ids = tokenizer(" ".join(TEXTS[:10]), add_special_tokens=False)["input_ids"]
    segments = {"wiki": [(ids[s : s + 12], ids[s + 12 : s + 18]) for s in (0, 18)]}
    unigram = UnigramModel.fit([np.array(ids[40:])], len(tokenizer))
    section = LMEval(corpora=["wiki"], systems=["full", "nugget2d"], baseline_adapter="none",
                     contexts=[LMContextSetting(total_states=6, compressed_tokens=10, context_tokens=3)])
    result = evaluate_lm(model, tokenizer, segments, section, threshold=0.0, ratio=0.5, unigrams={"wiki": unigram},
                         provenance=["where Lambda came from"], stand_in="stand-in text")
    rows = {r.system: r for r in result.table.rows}
    assert list(rows) == ["full 6/10/3", "nugget2d 6/10/3"] and all(r.n == 2 for r in rows.values())
    assert rows["full 6/10/3"].metrics["attended_states"] == 6.0
    assert all(r.interval["wiki_subword_ppl"][0] <= r.metrics["wiki_subword_ppl"] <= r.interval["wiki_subword_ppl"][1]
               for r in rows.values())
    assert rows["full 6/10/3"].metrics["wiki_unigram_ppl"] == rows["nugget2d 6/10/3"].metrics["wiki_unigram_ppl"] > 1
    assert len(result.examples) == 2 * 2 and result.table.stand_in == "stand-in text"
    assert result.table.notes[0] == "where Lambda came from"
    with pytest.raises(ValueError, match="no trained model for"):
        evaluate_lm(model, tokenizer, segments, LMEval(corpora=["wiki"], baseline_adapter="trained"), threshold=0.0,
                    ratio=0.5, unigrams={"wiki": unigram})
    with pytest.raises(ValueError, match=r"corpora \['wiki'\] have no segments"):
        evaluate_lm(model, tokenizer, {}, section, threshold=0.0, ratio=0.5, unigrams={"wiki": unigram})


class _Silent:
    def info(self, *args: object) -> None:
        pass
