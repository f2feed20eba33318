"""Appendix-D normaliser: number words to digits, punctuation to spaces, strip, lowercase,
and the "output contains answer" accuracy test."""

from __future__ import annotations

import pytest

from stages.evaluate.lm.normalize import contains_answer, normalize_answer


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
    assert not contains_answer("12 apples", "2")  # whole words only
    assert not contains_answer("a cat", "at")
    assert not contains_answer("anything", "...")  # an empty normalised answer never matches
    assert not contains_answer("London", "Paris")
