"""Appendix-D normalisation of SQuAD answers and the accuracy test built on it.

Rules, in the paper's order: English number words to digits ("two" -> "2", also
"twenty-one" -> "21", "one hundred and five" -> "105"), every punctuation mark to a
space, strip, lowercase. An output is correct when it *contains* the normalised form of
any gold answer (SQuAD lists several). ``match="substring"`` is appendix D's reading (plain
containment: "2" is found in "12 apples"); ``match="word"`` requires the containment to
fall on word boundaries (so "a" is not found inside "cat"), a stricter choice of ours.
Runs of spaces are collapsed in both.
"""

from __future__ import annotations

import re
import unicodedata

_UNITS = "zero one two three four five six seven eight nine ten eleven twelve thirteen " \
         "fourteen fifteen sixteen seventeen eighteen nineteen".split()
_TENS = "twenty thirty forty fifty sixty seventy eighty ninety".split()
SMALL = {w: i for i, w in enumerate(_UNITS)} | {w: 20 + 10 * i for i, w in enumerate(_TENS)}
SCALES = {"hundred": 100, "thousand": 1_000, "million": 1_000_000, "billion": 1_000_000_000}
_WORD = "|".join(sorted([*SMALL, *SCALES], key=len, reverse=True))
# a run of number words joined by spaces, hyphens or an inner "and" ("one hundred and five")
NUMBER_RUN = re.compile(
    rf"\b(?:{_WORD})(?:(?:[\s-]+|\s+and\s+)(?:{_WORD}))*\b", re.IGNORECASE
)


def words_to_int(words: list[str]) -> int:
    """Value of number words, e.g. ``["three", "hundred", "twelve"]`` -> 312."""
    total, current = 0, 0
    for w in words:
        if w in SMALL:
            current += SMALL[w]
        elif w == "hundred":
            current = max(current, 1) * 100
        else:  # thousand, million, billion close a group
            total += max(current, 1) * SCALES[w]
            current = 0
    return total + current


def numbers_to_digits(text: str) -> str:
    def convert(match: re.Match[str]) -> str:
        words = [w for w in re.split(r"[\s-]+", match.group(0).lower()) if w != "and"]
        return str(words_to_int(words))

    return NUMBER_RUN.sub(convert, text)


def _is_punctuation(ch: str) -> bool:
    return unicodedata.category(ch).startswith("P") or ch in "$+<=>^`|~"


def normalize_answer(text: str) -> str:
    """Appendix D: numbers to digits, punctuation to spaces, strip, lowercase."""
    text = numbers_to_digits(text)
    text = "".join(" " if _is_punctuation(ch) else ch for ch in text)
    return text.strip().lower()


MATCHES = ("substring", "word")


def contains_answer(output: str, answers: str | list[str], match: str = "substring") -> bool:
    """QA accuracy test: the normalised output contains the normalised form of one of
    ``answers`` (``match``: see the module docstring). An answer that normalises to
    nothing never matches."""
    if match not in MATCHES:
        raise ValueError(f"eval.qa.match: value {match!r} is not one of {list(MATCHES)}")
    out = " ".join(normalize_answer(output).split())
    for answer in [answers] if isinstance(answers, str) else answers:
        ans = " ".join(normalize_answer(answer).split())
        if ans and (ans in out if match == "substring" else f" {ans} " in f" {out} "):
            return True
    return False


def gold_answers(record: dict) -> list[str]:
    """Every gold answer of a QA record (``answers``; records of older builds: ``answer``)."""
    return list(record.get("answers") or [record["answer"]])
