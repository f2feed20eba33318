"""The QA / summarisation scoring recipe (stages/nugget2d/lm/scoring.py) on hand-made
generations, against hand-computed accuracy, ROUGE, context ratio and cost; and that the
evaluation recipes (which the stages and ``nugget eval`` call) score with it."""

from __future__ import annotations

import math
from typing import Any

import pytest

from stages.common.intervals import hits_interval
from stages.nugget2d.config import QAEval
from stages.nugget2d.lm import scoring
from stages.nugget2d.lm.cost import DecodeCost
from stages.nugget2d.lm.prompted import Generation
from stages.nugget2d.lm.scoring import score_qa, score_summarization


def _gen(text: str, context_states: int, generated_tokens: int, ms: float) -> Generation:
    cost = DecodeCost(generated_tokens=generated_tokens, attended_states=10.0 * generated_tokens,
                      kv_bytes=100.0 * generated_tokens, ms_per_token=ms, encode_ms=ms)
    return Generation(text, list(range(generated_tokens)), context_states, cost)


QA_RECORDS: list[dict[str, Any]] = [
    {"id": "a", "document": "A.", "answer": "Paris", "answers": ["Paris"]},
    {"id": "b", "document": "B.", "answer": "two"},  # an older build: ``answer`` only; "two" normalises to "2"
    {"id": "c", "document": "C.", "answer": "Berlin", "answers": ["Berlin", "Munich"]},
]
# right; right only under substring matching ("2" inside "12"); wrong
QA_GENS = [_gen("It is Paris.", 5, 1, 2.0), _gen("12 apples", 10, 2, 4.0), _gen("London", 0, 1, 6.0)]
DOC_TOKENS = [10, 10, 5]


def test_qa_accuracy_context_ratio_and_cost_by_hand():
    s = score_qa(QA_GENS, QA_RECORDS, DOC_TOKENS, QAEval(match="substring"))
    assert s.n == 3 and s.hits == 2 and s.quality == ("accuracy",)
    assert s.metrics["accuracy"] == pytest.approx(200 / 3)
    assert s.metrics["context_ratio"] == pytest.approx((0.5 + 1.0 + 0.0) / 3)
    # attended states and ms/step weighted by tokens (1, 2, 1), the others per example
    assert s.metrics["attended_states"] == pytest.approx((10 + 40 + 10) / 4)
    assert s.metrics["ms_per_token"] == pytest.approx((2 + 8 + 6) / 4)
    assert s.metrics["kv_bytes"] == pytest.approx(400 / 3) and s.metrics["generated_tokens"] == pytest.approx(4 / 3)
    assert list(s.metrics)[:2] == ["accuracy", "context_ratio"]
    # Wilson 95% of 2 of 3: centre (p + z²/2n) / (1 + z²/n), half z sqrt(p(1-p)/n + z²/4n²) / (1 + z²/n)
    z2, p = 1.96**2, 2 / 3
    centre, half = (p + z2 / 6) / (1 + z2 / 3), 1.96 * math.sqrt(p * (1 - p) / 3 + z2 / 36) / (1 + z2 / 3)
    assert s.interval["accuracy"] == pytest.approx((100 * (centre - half), 100 * (centre + half)))
    assert [(e["id"], e["correct"], e["doc_tokens"]) for e in s.examples] == [("a", True, 10), ("b", True, 10),
                                                                             ("c", False, 5)]
    assert s.examples[1]["output"] == "12 apples" and s.examples[1]["answer"] == "two"
    # one question per document: the unit is the question, every record its own
    units = s.units["accuracy"]
    assert (units.unit, units.ids, units.stats.tolist()) == ("document", ("a", "b", "c"),
                                                              [[100.0, 1.0], [100.0, 1.0], [0.0, 1.0]])
    assert units.value() == pytest.approx(s.metrics["accuracy"])


def test_qa_questions_on_one_document_are_one_unit():
    """SQuAD asks ~5 questions about each paragraph: they share the system's one reading of it, so
    the unit is the document, and the interval is no longer Wilson's over questions (which treats
    them as independent) but the bootstrap one over documents: none from 2 documents."""
    records = [dict(r, document="one paragraph") if r["id"] != "c" else r for r in QA_RECORDS]
    s = score_qa(QA_GENS, records, DOC_TOKENS, QAEval(match="substring"))
    units = s.units["accuracy"]
    assert s.n == 3 and units.n == 2 and units.ids == ("a", "c")
    assert units.stats.tolist() == [[200.0, 2.0], [0.0, 1.0]] and units.value() == pytest.approx(200 / 3)
    assert "accuracy" not in s.interval
    # 20 documents of 3 questions: the bootstrap interval over documents, wider than Wilson's over 60 questions
    many = [{"id": f"q{i}", "document": f"doc {i // 3}", "answer": "Paris"} for i in range(60)]
    gens = [_gen("Paris" if (i // 3) % 2 else "no", 1, 1, 1.0) for i in range(60)]
    s = score_qa(gens, many, [1] * 60, QAEval())
    low, high = s.interval["accuracy"]
    wilson = hits_interval([(i // 3) % 2 == 1 for i in range(60)])
    assert wilson is not None
    wilson_low, wilson_high = wilson
    assert s.units["accuracy"].n == 20 and high - low > wilson_high - wilson_low
    with pytest.raises(ValueError, match=r"QA records \['a'\] have no field 'document'"):
        score_qa(QA_GENS[:1], [{"id": "a", "answer": "x"}], [1], QAEval())


def test_qa_match_comes_from_the_section():
    s = score_qa(QA_GENS, QA_RECORDS, DOC_TOKENS, QAEval(match="word"))
    assert s.hits == 1 and s.metrics["accuracy"] == pytest.approx(100 / 3)


def test_summarization_rouge_by_hand():
    records = [{"id": "x", "answer": "the cat sat on the mat"}, {"id": "y", "answer": "dog running"},
               {"id": "z", "answer": "world"}]
    gens = [_gen("the cat sat", 3, 1, 1.0), _gen("dogs run", 3, 1, 1.0), _gen("hello", 3, 1, 1.0)]
    s = score_summarization(gens, records, [6, 6, 6])
    # x: 3 of 3 predicted unigrams in 6 -> F 2/3; bigrams 2 of 2 in 5 -> F 4/7; LCS 3 -> as ROUGE-1
    # y: stemmed "dog run" both sides -> 100; z: nothing shared -> 0
    r1, r2 = [200 / 3, 100.0, 0.0], [400 / 7, 100.0, 0.0]
    assert s.quality == ("rouge1", "rouge2", "rougeL", "rougeLsum") and s.n == 3
    assert s.metrics["rouge1"] == pytest.approx(sum(r1) / 3) and s.metrics["rougeL"] == pytest.approx(sum(r1) / 3)
    assert s.metrics["rougeLsum"] == pytest.approx(sum(r1) / 3)  # one sentence each: as ROUGE-L
    assert s.metrics["rouge2"] == pytest.approx(sum(r2) / 3)
    assert s.metrics["context_ratio"] == pytest.approx(0.5)
    # per article its score: the units the report resamples and pairs; no interval from 3 articles
    assert {t: u.unit for t, u in s.units.items()} == dict.fromkeys(("rouge1", "rouge2", "rougeL", "rougeLsum"), "article")
    assert s.units["rouge1"].ids == ("x", "y", "z")
    assert s.units["rouge2"].stats[:, 0].tolist() == pytest.approx(r2) and s.units["rouge2"].stats[:, 1].tolist() == [1] * 3
    assert s.units["rouge1"].value() == pytest.approx(s.metrics["rouge1"])
    assert [round(e["rouge2"], 3) for e in s.examples] == [round(400 / 7, 3), 100.0, 0.0]
    assert s.examples[0]["reference"] == "the cat sat on the mat" and not s.interval
    with pytest.raises(ValueError, match="only QA scores"):
        _ = s.hits


def test_bad_input_is_a_clear_error():
    with pytest.raises(ValueError, match="no records"):
        score_summarization([], [], [])
    with pytest.raises(ValueError, match="2 generations for 3 records"):
        score_qa(QA_GENS[:2], QA_RECORDS, DOC_TOKENS, QAEval())


def test_the_recipes_score_with_this_module():
    from stages.nugget2d.lm import qa, summarization

    assert qa.score_qa is scoring.score_qa
    assert summarization.score_summarization is scoring.score_summarization
