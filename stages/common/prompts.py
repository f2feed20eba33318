"""Appendix-C task records cut into what a model reads and what it must produce.

The layout of a prompt and its cut into document part and prompt part is the library's
(`nugget_core.nugget2d.prompts.PromptFormat`); this module applies it to the pipeline's
task records (QA / summary records of ``build_lm``: the document then ``instruction``).

Fine-tuning (the Nugget2D and Full fine-tuned systems) and evaluation must cut and
tokenise records identically, or the fine-tuned models would be evaluated on inputs they
never saw; so both go through :func:`encode_task_records`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from nugget_core.nugget2d.prompts import PromptFormat, encode, encode_parts


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
