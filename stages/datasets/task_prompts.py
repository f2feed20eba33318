"""Appendix-C task records cut into what a model reads and what it must produce.

``build_lm``'s ``qa.jsonl`` / ``summarization.jsonl`` records carry ``full_prompt`` (the
whole appendix-C prompt, ``[INST] $DOCUMENT ... [/INST]``), ``prompt`` (the template
text after ``$DOCUMENT``) and ``answer``. The *document part* is ``full_prompt`` up to
where ``prompt`` begins; Full reads it whole, Nugget2D compresses it. Fine-tuning (the
Nugget2D and Full fine-tuned systems) and evaluation must cut and tokenise the records
identically, or the fine-tuned models would be evaluated on inputs they never saw; so
both go through :func:`encode_task_records`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def split_template(full_prompt: str, prompt: str) -> tuple[str, str]:
    """(document part, prompt part) of an appendix-C prompt whose tail is ``prompt``."""
    if not full_prompt.endswith(prompt):
        raise ValueError(f"full_prompt does not end with the record's prompt {prompt[:40]!r}")
    return full_prompt[: len(full_prompt) - len(prompt)].rstrip(), " " + prompt.strip()


def encode(tokenizer: Any, texts: Sequence[str], limit: int = 0) -> list[list[int]]:
    """Token ids without special tokens; ``limit`` > 0 keeps the first ``limit``."""
    ids = tokenizer(list(texts), add_special_tokens=False)["input_ids"]
    return [list(x[:limit]) if limit else list(x) for x in ids]


def encode_task_records(
    tokenizer: Any, records: Sequence[dict[str, Any]], max_doc_tokens: int = 0
) -> tuple[list[list[int]], list[list[int]]]:
    """(document-part ids cut to ``max_doc_tokens`` (0 = all), prompt-part ids) per record."""
    parts = [split_template(r["full_prompt"], r["prompt"]) for r in records]
    return encode(tokenizer, [d for d, _ in parts], max_doc_tokens), encode(tokenizer, [p for _, p in parts])


def encode_answers(tokenizer: Any, records: Sequence[dict[str, Any]]) -> list[list[int]]:
    """Training targets: `` answer`` ids followed by EOS, so a fine-tuned model learns
    where to stop (greedy decoding ends at EOS)."""
    if tokenizer.eos_token_id is None:
        raise ValueError(f"tokenizer {tokenizer.name_or_path!r} has no eos_token; fine-tuning needs one")
    return [ids + [tokenizer.eos_token_id] for ids in encode(tokenizer, [" " + r["answer"].strip() for r in records])]
