"""How a task prompt is laid out for the LM, and cut where the document ends.

A prompt is one user turn: ``[before] $DOCUMENT [instruction]``. :class:`PromptFormat`
lays the turn out, either as printed in the Nugget2D paper's appendix C (``inst``:
``[INST] ... [/INST]``, LLaMA-2-chat's format) or in the base LM's own chat template
(``chat_template``, for instruct LMs trained on another format), and cuts it where the
document ends: the *document part* (a Full model reads it whole, Nugget2D compresses it)
and the *prompt part* (the decoder reads it next to the nuggets).

`encode` / `encode_parts` tokenise those parts without special tokens: the one BOS a
model expects is written by `PromptFormat.wrap`, so the compressor and the decoder see
exactly the tokens of the whole turn, split in two.
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
    """A prompt layout (``name``, one of `PROMPT_FORMATS`) for ``tokenizer``'s LM."""

    name: str
    tokenizer: Any = None  # needed by chat_template

    def __post_init__(self) -> None:
        if self.name not in PROMPT_FORMATS:
            raise ValueError(f"prompts.format: value {self.name!r} is not one of {PROMPT_FORMATS}")
        if self.name == "chat_template" and getattr(self.tokenizer, "chat_template", None) is None:
            name = getattr(self.tokenizer, "name_or_path", self.tokenizer)
            raise ValueError(f"prompts.format: chat_template, but tokenizer {name!r} has no chat template")

    @classmethod
    def for_tokenizer(cls, tokenizer: Any) -> PromptFormat:
        """The LM's own chat template when its tokenizer has one, else appendix C's ``inst``
        layout: the default of the short API (`nugget_core.nugget2d.api`), since an instruct
        LM answers best in the format it was trained on."""
        name = "chat_template" if getattr(tokenizer, "chat_template", None) is not None else "inst"
        return cls(name, tokenizer)

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
