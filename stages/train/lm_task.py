"""What the training tasks on ``prepare_lm``'s base LM share: its tokenizer, the pad id,
and appendix-C task examples (``build_lm``'s ``qa.jsonl`` / ``summarization.jsonl``)
tokenised exactly as the evaluations tokenise them (`stages.common.prompts`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from stages.artifacts.data import LMRecords
from stages.train.task import TaskBase


@dataclass
class BaseLMTask(TaskBase):
    data: LMRecords  # build_lm's output
    base_dir: str  # prepare_lm's HF folder (weights + tokenizer)
    _tok: Any = field(default=None, init=False, repr=False)

    def tokenizer(self) -> Any:
        from transformers import AutoTokenizer

        if self._tok is None:
            self._tok = AutoTokenizer.from_pretrained(self.base_dir, trust_remote_code=False)
        return self._tok

    def pad_id(self) -> int:
        tok = self.tokenizer()
        return tok.pad_token_id if tok.pad_token_id is not None else (tok.eos_token_id or 0)

    def task_examples(
        self, task: str, split: str, max_doc_tokens: int, prompt_format: str
    ) -> list[dict[str, list[int]]]:
        """``{"doc", "prompt", "answer"}`` ids of split ``split`` of ``<task>.jsonl`` laid
        out in ``prompt_format``: the document part (cut to ``max_doc_tokens``, 0 = all),
        the prompt part, and the answer followed by EOS."""
        from nugget_core.nugget2d.prompts import PromptFormat
        from stages.common.prompts import encode_answers, encode_task_records
        from stages.common.records import read_records

        records = read_records(self.data.records(task), split, 0)
        tok = self.tokenizer()
        fmt = PromptFormat(prompt_format, tok)
        docs, prompts = encode_task_records(tok, records, fmt, max_doc_tokens)
        answers = encode_answers(tok, records, fmt)
        return [{"doc": d, "prompt": p, "answer": a} for d, p, a in zip(docs, prompts, answers, strict=True)]
