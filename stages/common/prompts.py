"""Appendix-C task records cut into what a model reads and what it must produce.

A prompt is one user turn: ``[before] $DOCUMENT [instruction]`` (QA / summary records
of ``build_lm``: the document then ``instruction``; LMSumm: an instruction then the
text). :class:`PromptFormat` lays the turn out, either as printed in appendix C
(``inst``: ``[INST] ... [/INST]``, LLaMA-2-chat's format, the paper's) or in the base
LM's own chat template (``chat_template``, for instruct LMs trained on another format),
and cuts it where the document ends: the *document part* (Full reads it whole, Nugget2D
compresses it) and the *prompt part* (the decoder reads it next to the nuggets).

Fine-tuning (the Nugget2D and Full fine-tuned systems) and evaluation must cut and
tokenise records identically, or the fine-tuned models would be evaluated on inputs they
never saw; so both go through :func:`encode_task_records`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

PROMPT_FORMATS = ("inst", "chat_template")
INST_OPEN, INST_CLOSE = "[INST]", "[/INST]"
_DOCUMENT = "\x00DOCUMENT\x00"  # placeholder that no template or tokenizer alters


@dataclass(frozen=True)
class PromptFormat:
    name: str
    tokenizer: Any = None  # needed by chat_template

    def __post_init__(self) -> None:
        if self.name not in PROMPT_FORMATS:
            raise ValueError(f"prompts.format: value {self.name!r} is not one of {PROMPT_FORMATS}")
        if self.name == "chat_template" and getattr(self.tokenizer, "chat_template", None) is None:
            name = getattr(self.tokenizer, "name_or_path", self.tokenizer)
            raise ValueError(f"prompts.format: chat_template, but tokenizer {name!r} has no chat template")

    @cached_property
    def bos(self) -> str:
        """The BOS token's text when the tokenizer starts every sequence with it (LLaMA's
        SentencePiece tokenizers: the model expects ``<s>[INST]``), else ``""`` (SmolLM2's
        byte-level BPE adds none). Read from what the tokenizer does with its default
        special tokens, so any tokenizer answers for itself."""
        tok = self.tokenizer
        if tok is None or tok.bos_token_id is None:
            return ""
        ids = tok("x", add_special_tokens=True)["input_ids"]
        return tok.bos_token if ids and ids[0] == tok.bos_token_id else ""

    def wrap(self, user: str) -> str:
        """One user turn, ready for the answer to follow: appendix C's ``[INST] ...
        [/INST]`` after the BOS the model expects (we tokenise without special tokens, so
        the one BOS is written here), or the chat template's turn (which places its own)."""
        if self.name == "inst":
            return f"{self.bos}{INST_OPEN} {user} {INST_CLOSE}"
        return self.tokenizer.apply_chat_template(
            [{"role": "user", "content": user}], tokenize=False, add_generation_prompt=True
        )

    def parts(self, document: str, instruction: str = "", before: str = "") -> tuple[str, str]:
        """(document part, prompt part) of the turn ``before + document + " " + instruction``.

        The document part ends with the document's last non-space character; whitespace
        after it starts the prompt part, so ``"[INST]"`` + ``" Based on ..."`` (NoDoc)
        tokenises like the whole prompt.
        """
        sep = " " if document and instruction else ""
        head, tail = self.wrap(f"{before}{_DOCUMENT}{sep}{instruction}").split(_DOCUMENT)
        text = head + document
        document_part = text.rstrip()
        return document_part, text[len(document_part) :] + tail

    @property
    def answer_prefix(self) -> str:
        """What separates the turn from the answer: a space after ``[/INST]``; nothing
        after a chat template's assistant header (it ends in a newline)."""
        return " " if self.name == "inst" else ""


def encode(tokenizer: Any, texts: Sequence[str], limit: int = 0) -> list[list[int]]:
    """Token ids without special tokens; ``limit`` > 0 keeps the first ``limit``."""
    ids = tokenizer(list(texts), add_special_tokens=False)["input_ids"]
    return [list(x[:limit]) if limit else list(x) for x in ids]


def encode_parts(
    tokenizer: Any, parts: Sequence[tuple[str, str]], max_doc_tokens: int = 0
) -> tuple[list[list[int]], list[list[int]]]:
    """(document-part ids cut to ``max_doc_tokens`` (0 = all), prompt-part ids) of
    `PromptFormat.parts` outputs."""
    return encode(tokenizer, [d for d, _ in parts], max_doc_tokens), encode(tokenizer, [p for _, p in parts])


def encode_task_records(
    tokenizer: Any, records: Sequence[dict[str, Any]], fmt: PromptFormat, max_doc_tokens: int = 0
) -> tuple[list[list[int]], list[list[int]]]:
    """`encode_parts` of each record's document and instruction."""
    return encode_parts(tokenizer, [fmt.parts(r["document"], r["instruction"]) for r in records], max_doc_tokens)


def encode_answers(tokenizer: Any, records: Sequence[dict[str, Any]], fmt: PromptFormat) -> list[list[int]]:
    """Training targets: answer ids followed by EOS, so a fine-tuned model learns where
    to stop (greedy decoding ends at EOS)."""
    if tokenizer.eos_token_id is None:
        raise ValueError(f"tokenizer {tokenizer.name_or_path!r} has no eos_token; fine-tuning needs one")
    answers = [fmt.answer_prefix + r["answer"].strip() for r in records]
    return [ids + [tokenizer.eos_token_id] for ids in encode(tokenizer, answers)]
