"""Pure builders of the Nugget2D datasets (Nugget2D §2.5, §5, §6, appendix C).

- :func:`lm_segments`: autoregressive-LM samples of ``distant + recent`` tokens, the
  first ``distant`` compressed, the rest predicted from recent tokens + nuggets (§2.5).
- :func:`continuation_triples`: consecutive (doc, prompt, answer) chunks of up to
  512/16/128 tokens (§6.1 text-continuation objective).
- :func:`qa_record` / :func:`summary_record`: task examples with the exact prompts of
  appendix C (``[INST] ... [/INST]``). ``prompt`` is the template text after the
  document (what the decoder reads next to the nuggets); ``full_prompt`` fills the
  document in, for the uncompressed Full/NoDoc baselines; ``instruction`` is the user
  turn's text after the document without the ``[INST]`` markers, which
  `nugget_core.nugget2d.prompts.PromptFormat` lays out in another chat format.
- Offline stand-ins, labelled in every record (``stand_in``): :func:`cloze_qa` (SQuAD
  stand-in: a capitalised word or number of a real sentence is blanked out; the question
  is that sentence with a blank, the answer the removed span, the document the passage
  it came from — extractive like SQuAD) and :func:`lead_summary` (CNN/DM stand-in: the
  first sentence is the summary, the rest of the text the document, so the summary is
  never copied from the document).

Appendix C says LMSumm asks for ``$WORD`` words with "WORD = r n" where n is the word
count (spaces) and r the ratio; we use ``max(1, ceil(r * n))``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from stages.corpora.text import split_sentences

LMSUMM_PROMPT = "[INST] Please summarize the following text into $WORD words: $TEXT [/INST]"
QA_PROMPT = "[INST] $DOCUMENT Based on the provided document, answer the following question: $QUESTION [/INST]"
SUMMARY_PROMPT = "[INST] $DOCUMENT Please summarize the above document in one sentence. [/INST]"

QA_STAND_IN = "cloze question cut from a real sentence (stand-in for SQuAD)"
SUMMARY_STAND_IN = "lead sentence as summary of the rest (stand-in for CNN/DailyMail)"
WIKI_STAND_IN = "offline Wikipedia articles (stand-in for WikiText-103)"
PILE_STAND_IN = "Python documentation (stand-in for the Pile)"
BLANK = "_____"
SPAN = re.compile(r"(?<=\s)(?:[A-Z][\w'-]+(?:\s+[A-Z][\w'-]+)*|\d[\d,.]*\d|\d)(?=[\s,.;:!?])")


def lmsumm_words(text: str, ratio: float) -> int:
    return max(1, math.ceil(ratio * len(text.split(" "))))


def lmsumm_prompt(text: str, ratio: float) -> str:
    return LMSUMM_PROMPT.replace("$WORD", str(lmsumm_words(text, ratio))).replace("$TEXT", text)


def lmsumm_instruction(text: str, ratio: float) -> str:
    """LMSumm's user-turn text before ``$TEXT`` (appendix C, without the ``[INST]`` markers)."""
    return LMSUMM_PROMPT.split("$TEXT")[0].removeprefix("[INST] ").replace("$WORD", str(lmsumm_words(text, ratio)))


def _split_template(template: str, **fields: str) -> tuple[str, str]:
    """(full prompt, text after $DOCUMENT) of a template."""
    full = template
    for k, v in fields.items():
        full = full.replace(f"${k}", v)
    after = template.split("$DOCUMENT", 1)[1]
    for k, v in fields.items():
        if k != "DOCUMENT":
            after = after.replace(f"${k}", v)
    return full, after.strip()


def _instruction(after: str) -> str:
    return after.removesuffix("[/INST]").strip()


def qa_record(document: str, question: str, answer: str, stand_in: str = "",
              aliases: Sequence[str] = ()) -> dict[str, Any]:
    """A QA record: ``answer`` is the first gold answer (the fine-tuning target),
    ``answers`` every gold answer (accuracy accepts any of them, app. D)."""
    full, after = _split_template(QA_PROMPT, DOCUMENT=document, QUESTION=question)
    answers = list(dict.fromkeys([answer, *aliases]))
    return {"task": "qa", "document": document, "prompt": after, "full_prompt": full,
            "instruction": _instruction(after), "answer": answer, "answers": answers, "stand_in": stand_in}


def summary_record(document: str, summary: str, stand_in: str = "") -> dict[str, str]:
    full, after = _split_template(SUMMARY_PROMPT, DOCUMENT=document)
    return {"task": "summarization", "document": document, "prompt": after, "full_prompt": full,
            "instruction": _instruction(after), "answer": summary, "stand_in": stand_in}


def lm_segments(docs: Sequence[Sequence[int]], distant: int, recent: int) -> list[dict[str, list[int]]]:
    """Consecutive windows of each document; a tail with no recent token is dropped."""
    size = distant + recent
    out = []
    for ids in docs:
        for start in range(0, len(ids), size):
            window = list(ids[start : start + size])
            if len(window) > distant:
                out.append({"distant": window[:distant], "recent": window[distant:]})
    return out


def continuation_triples(
    docs: Sequence[Sequence[int]], doc: int, prompt: int, answer: int
) -> list[dict[str, list[int]]]:
    """Consecutive (doc, prompt, answer) chunks; a tail without a full prompt and at least
    one answer token is dropped."""
    size = doc + prompt + answer
    out = []
    for ids in docs:
        for start in range(0, len(ids), size):
            w = list(ids[start : start + size])
            if len(w) > doc + prompt:
                out.append({"doc": w[:doc], "prompt": w[doc : doc + prompt], "answer": w[doc + prompt :]})
    return out


def cloze_qa(passage: str, rng: np.random.Generator) -> dict[str, str] | None:
    """A SQuAD stand-in from one passage, or None when no sentence has a blankable span."""
    sentences = split_sentences(passage)
    # no space before the first word: a sentence-initial capital is not a name
    options = [(s, m) for s in sentences for m in SPAN.finditer(s + " ")]
    if not options:
        return None
    sentence, m = options[int(rng.integers(len(options)))]
    padded = sentence + " "
    question = (padded[: m.start()] + BLANK + padded[m.end() :]).strip()
    return qa_record(passage, f"Fill in the blank: {question}", m.group(0), QA_STAND_IN)


def lead_summary(text: str) -> dict[str, str] | None:
    """A CNN/DM stand-in (first sentence -> summary of the rest), or None if < 2 sentences."""
    sentences = split_sentences(text)
    if len(sentences) < 2:
        return None
    return summary_record(" ".join(sentences[1:]), sentences[0], SUMMARY_STAND_IN)
