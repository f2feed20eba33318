"""Appendix-D normaliser: number words to digits, punctuation to spaces, strip, lowercase,
and the "output contains answer" accuracy test."""

from __future__ import annotations

import pytest

from stages.nugget2d.lm.normalize import contains_answer, normalize_answer


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("two", "2"),  # the paper's example
        ("Two", "2"),
        ("twenty-one", "21"),
        ("one hundred and five", "105"),
        ("three thousand two hundred", "3200"),
        ("eleven players", "11 players"),
        ("Paris.", "paris"),  # punctuation to spaces, then strip
        ("  The U.S. Army!  ", "the u s  army"),
        ("Saint-Denis, France", "saint denis  france"),
        ("someone often gone", "someone often gone"),  # no number words inside words
    ],
)
def test_appendix_d_rules(text, expected):
    assert normalize_answer(text) == expected


def test_output_contains_answer_after_normalisation():
    assert contains_answer("The answer is two apples.", "2")
    assert contains_answer("He was born in PARIS, France", "paris")
    assert contains_answer("the U.S. Army", "U.S.")
    assert not contains_answer("anything", "...")  # an empty normalised answer never matches
    assert not contains_answer("London", "Paris")


def test_appendix_d_accepts_any_gold_answer_as_a_substring():
    """Appendix D is substring containment against every gold answer
    (the old test was whole words against the first answer only)."""
    assert contains_answer("12 apples", "2")  # substring, as in the paper
    assert contains_answer("in the year 1905", ["the 20th century", "1905"])  # any gold answer
    assert not contains_answer("in the year 1905", ["the 20th century", "1906"])
    assert not contains_answer("12 apples", "2", match="word")  # the stricter option
    assert not contains_answer("a cat", "at", match="word")
    with pytest.raises(ValueError, match="eval.qa.match"):
        contains_answer("x", "x", match="exact")


def test_squad_records_keep_every_gold_answer():
    from stages.corpora.paper_sources import squad_from_rows
    from stages.nugget2d.lm.normalize import gold_answers
    from stages.nugget2d.lm_builders import qa_record

    rows = [{"context": "C", "question": "Q?", "answers": {"text": ["Denver Broncos", "Broncos", "Broncos"]}},
            {"context": "C2", "question": "Q2?", "answers": {"text": []}}]
    ((context, question, answers),) = squad_from_rows(rows)
    record = qa_record(context, question, answers[0], aliases=answers[1:])
    assert record["answer"] == "Denver Broncos" and gold_answers(record) == ["Denver Broncos", "Broncos"]
    assert gold_answers({"answer": "old build"}) == ["old build"]
