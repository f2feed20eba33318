"""A short text-in, text-out API on a `Nugget2DModel`: compress a text once, then answer
questions about it or continue it from its nuggets.

    ctx = compress_text(model, tokenizer, document)              # the nuggets of the document
    answer(model, tokenizer, ctx, "Who ...?", max_new_tokens=32)   # greedy answer, from ctx only
    ctx = compress_text(model, tokenizer, text, prompt_format=None)
    continue_text(model, tokenizer, ctx, max_new_tokens=32)        # greedy continuation

Built on `Nugget2DModel.compress` (phi keeps ``ceil(r n)`` tokens' KV at every layer),
`generate_from_context` (theta decodes attending to those nuggets only) and the prompt
layout of `nugget_core.nugget2d.prompts`: a text compressed for questions is the
*document part* of the user turn (the chat template's or appendix C's head, then the
text), and each question is the *prompt part*, which is how the pipeline's QA and
summarisation evaluations cut their prompts. A text compressed for continuation is plain
text; its last token is held out, so the decoder's first input is a real token.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from .config import COMPRESSOR, DECODER
from .context import CompressedContext
from .generation import generate_from_context
from .model import Nugget2DModel
from .prompts import PromptFormat, encode

#: ``prompt_format`` of `compress_text`: the LM's chat template when it has one, else ``inst``.
AUTO = "auto"


@dataclass
class CompressedText:
    """A text compressed by `compress_text`.

    Attributes:
        text: the text as given.
        context: its nuggets (every layer's KV of the kept tokens).
        prompt_format: the turn layout the text was compressed in (for `answer`), or None
            for plain text (for `continue_text`).
        held_out: token ids not compressed, read first by the decoder (plain text: the
            last token; a turn: none, the question's prompt part follows).
        tokens: tokens the compressor read.
    """

    text: str
    context: CompressedContext
    prompt_format: PromptFormat | None
    held_out: list[int]
    tokens: int

    @property
    def nuggets(self) -> int:
        """Tokens whose KV the context keeps."""
        return int(self.context.counts[0])


def _format(tokenizer: Any, prompt_format: PromptFormat | str | None) -> PromptFormat | None:
    if prompt_format is None or isinstance(prompt_format, PromptFormat):
        return prompt_format
    if prompt_format == AUTO:
        return PromptFormat.for_tokenizer(tokenizer)
    return PromptFormat(prompt_format, tokenizer)


@torch.no_grad()
def compress_text(
    model: Nugget2DModel,
    tokenizer: Any,
    text: str,
    *,
    ratio: float | None = None,
    prompt_format: PromptFormat | str | None = AUTO,
    max_tokens: int = 0,
) -> CompressedText:
    """Compress ``text`` with phi at ``ratio`` (default: the model's ``config.ratio``).

    ``prompt_format``: ``"auto"`` (the LM's chat template, else ``"inst"``), a format name
    or a `PromptFormat`: the text is compressed as the document of a user turn, for
    `answer`; None: as plain text, for `continue_text`. ``max_tokens`` > 0 keeps the
    first ``max_tokens`` tokens of what is compressed.
    """
    if not text.strip():
        raise ValueError("compress_text: text is empty")
    fmt = _format(tokenizer, prompt_format)
    if fmt is None:
        ids = encode(tokenizer, [text], max_tokens)[0]
        if len(ids) < 2:
            raise ValueError(f"compress_text: text {text!r} has {len(ids)} token(s); continuing needs 2 or more")
        ids, held_out = ids[:-1], ids[-1:]
    else:
        document_part, _ = fmt.parts(text)
        ids, held_out = encode(tokenizer, [document_part], max_tokens)[0], []
    input_ids = torch.tensor([ids], dtype=torch.long, device=model.device)
    context = model.compress(input_ids, ratio=ratio, adapter=COMPRESSOR)
    return CompressedText(text, context, fmt, held_out, len(ids))


def _decode(
    model: Nugget2DModel, tokenizer: Any, ctx: CompressedText, prompt: list[int], max_new_tokens: int,
    soft_prompt: bool,
) -> str:
    """Greedy decoding with theta from ``ctx`` and ``prompt``; the text up to EOS."""
    if max_new_tokens < 1:
        raise ValueError(f"max_new_tokens: value {max_new_tokens} must be >= 1")
    eos = tokenizer.eos_token_id
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else (eos or 0)
    prompt_ids = torch.tensor([prompt], dtype=torch.long, device=model.device) if prompt else None
    result = generate_from_context(
        model, ctx.context, prompt_ids, max_new_tokens=max_new_tokens, eos_token_id=eos,
        pad_token_id=int(pad), soft_prompt=soft_prompt, adapter=DECODER,
    )
    row = result.tokens[0].tolist()
    if eos is not None and eos in row:
        row = row[: row.index(eos)]
    return tokenizer.decode(row, skip_special_tokens=True).strip()


def answer(
    model: Nugget2DModel, tokenizer: Any, ctx: CompressedText, question: str, *,
    max_new_tokens: int = 64, soft_prompt: bool = False,
) -> str:
    """The greedy answer to ``question`` about the text of ``ctx`` (compressed with a
    prompt format), read from its nuggets. ``soft_prompt``: start the decoder with the
    learned soft prompt (models trained with the autoencoding or continuation
    objective; fine-tuned ones were trained without)."""
    if ctx.prompt_format is None:
        raise ValueError("answer: ctx was compressed as plain text (prompt_format=None); "
                         "compress it with a prompt format to ask questions about it")
    if not question.strip():
        raise ValueError("answer: question is empty")
    _, prompt_part = ctx.prompt_format.parts(ctx.text, question)
    return _decode(model, tokenizer, ctx, encode(tokenizer, [prompt_part])[0], max_new_tokens, soft_prompt)


def continue_text(
    model: Nugget2DModel, tokenizer: Any, ctx: CompressedText, *, max_new_tokens: int = 64,
    soft_prompt: bool = False,
) -> str:
    """The greedy continuation of the plain text of ``ctx`` (compressed with
    ``prompt_format=None``), read from its nuggets and its held-out last token."""
    if ctx.prompt_format is not None:
        raise ValueError(f"continue_text: ctx was compressed as the document of a {ctx.prompt_format.name!r} "
                         "turn; compress it with prompt_format=None to continue it")
    return _decode(model, tokenizer, ctx, ctx.held_out, max_new_tokens, soft_prompt)
