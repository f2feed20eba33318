"""What the training tasks on ``prepare_lm``'s base LM share (`stages.nugget2d.full_ft_task`,
`stages.nugget2d.nugget2d_task`, `stages.nugget2d.autoencoding_task`), as plain functions: the
pad id of its tokenizer, and appendix-C task examples (``build_lm``'s ``qa.jsonl`` /
``summarization.jsonl``) tokenised exactly as the evaluations tokenise them
(`stages.common.prompts`). Each task loads its tokenizer from its ``base_dir``
(`stages.training.task_steps.load_tokenizer`)."""

from __future__ import annotations

from typing import Any

from stages.nugget2d.artifacts import LMRecords


def pad_id(tok: Any) -> int:
    """The id batches are padded with: the tokenizer's pad token, else EOS, else 0."""
    return tok.pad_token_id if tok.pad_token_id is not None else (tok.eos_token_id or 0)


def task_examples(
    data: LMRecords, tok: Any, task: str, split: str, max_doc_tokens: int, prompt_format: str
) -> list[dict[str, list[int]]]:
    """``{"doc", "prompt", "answer"}`` ids of split ``split`` of ``data``'s ``<task>.jsonl``
    laid out in ``prompt_format``: the document part (cut to ``max_doc_tokens``, 0 = all),
    the prompt part, and the answer followed by EOS."""
    from nugget_core.nugget2d.prompts import PromptFormat
    from stages.common.prompts import encode_answers, encode_task_records
    from stages.common.records import read_records

    records = read_records(data.records(task), split, 0)
    fmt = PromptFormat(prompt_format, tok)
    docs, prompts = encode_task_records(tok, records, fmt, max_doc_tokens)
    answers = encode_answers(tok, records, fmt)
    return [{"doc": d, "prompt": p, "answer": a} for d, p, a in zip(docs, prompts, answers, strict=True)]
