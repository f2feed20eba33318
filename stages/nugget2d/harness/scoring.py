"""The harness's three request types on token ids, for any system at one KV budget
(`settings.HarnessSettings`); no lm_eval import, so the rules are tested without it.

- `score_continuations` (``loglikelihood``): the context's compressed part becomes the
  system's context (`nugget_core.nugget2d.systems.system_context`), and the decoder reads the
  plain part and the continuation after it in one teacher-forced pass: the continuation's
  log-probability and whether greedy decoding would have produced it;
- `generate` (``generate_until``): the same context, then greedy decoding from the plain part
  (`generate_from_context`);
- `rolling_logprob` (``loglikelihood_rolling``): the system's token-by-token stream of
  eval_lm (`stages.nugget2d.lm.streams.make_stream`) over the whole document, Full's and NoDoc's
  re-encoded windows in batches (`nugget_core.nugget2d.baselines.window_nll`: the same
  log-probabilities, one pass for many tokens), and a document that Full's window or a press's
  budget holds whole read in one causal pass of the base LM (what those streams compute on
  it: `KEEP_ALL_BELOW_BUDGET`); Full keeping
  every token (``ratio=1``) instead reads it as lm_eval's ``hf`` model does (`whole_logprob`):
  the whole document up to the LM's ``max_length``, that model's windows past it.

Rows with nothing to compress (a context no longer than the plain part) read an empty
context, in batches of their own, so that no system is asked to keep positions of no tokens.
Within a batch a compressed part is compressed once however many requests read it (the
choices of a multiple-choice question share their context).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch

from nugget_core.nugget2d.baselines import window_nll
from nugget_core.nugget2d.context import pack_answer_inputs
from nugget_core.nugget2d.generation import generate_from_context
from nugget_core.nugget2d.systems import (
    SystemContext,
    empty_context,
    system_context,
    system_decoder,
)
from stages.common.device import to_device
from stages.common.padding import pad
from stages.nugget2d.harness.settings import (
    HarnessSettings,
    check_rolling,
    model_max_length,
    rolling_setting,
    rolling_windows,
    split_context,
    whole_document,
)

if TYPE_CHECKING:
    from nugget_core.nugget2d import Nugget2DModel


#: rolling systems whose stream re-encodes a window for every token (`make_stream`: a `FullStream`
#: of ``total_states`` tokens for full, of ``context_tokens`` for nodoc): scored by `window_nll`
WINDOW_SYSTEMS = ("full", "nodoc")
#: tokens per batched pass of `window_nll` (windows x window length): bounds the activations
WINDOW_TOKENS_PER_PASS = 4096
#: rolling systems that hold every token the base LM read while a document's ``n - 1`` stepped
#: tokens fit their ``total_states``: Full's window, and a press's recent window plus its memory
#: budget (`nugget_core.nugget2d.press_stream`: a press drops positions only once the memory
#: exceeds it, after that step's prediction). Over such a document each equals the plain base LM.
KEEP_ALL_BELOW_BUDGET = ("full", "streaming_llm", "key_norm")


@dataclass(frozen=True)
class ContinuationScore:
    """One ``loglikelihood`` answer and what the system read for it."""

    logprob: float  # sum of the continuation tokens' log-probabilities
    greedy: bool  # every continuation token is the argmax of its prediction
    compressed: int  # context tokens in the compressed part
    kept: int  # KV positions per layer the system kept for them


def batches(parts: Sequence[Sequence[int]], size: int) -> Iterator[list[int]]:
    """Indices of the rows in batches of at most ``size``: rows with a compressed part
    first, then rows without one (module docstring)."""
    for empty in (False, True):
        rows = [i for i, p in enumerate(parts) if (len(p) == 0) == empty]
        for start in range(0, len(rows), size):
            yield rows[start : start + size]


def read_context(model: Nugget2DModel, settings: HarnessSettings, parts: Sequence[Sequence[int]],
                 pad_id: int) -> SystemContext:
    """The system's context of each compressed part (all non-empty or all empty); a part
    that repeats (the choices of one multiple-choice question) is compressed once."""
    unique = list(dict.fromkeys(tuple(p) for p in parts))
    if not any(unique):
        adapter, soft = system_decoder(settings.system, settings.soft_prompt)
        return SystemContext(empty_context(model, len(parts)), adapter, soft)
    ids, mask = to_device(pad(unique, pad_id), model.device)
    read = system_context(model, settings.system, ids, mask, settings.ratio, settings.press, settings.soft_prompt)
    if len(unique) < len(parts):
        index = torch.tensor([unique.index(tuple(p)) for p in parts], dtype=torch.long, device=model.device)
        read.context = read.context.rows(index)
    return read


@torch.no_grad()
def score_continuations(model: Nugget2DModel, settings: HarnessSettings,
                        requests: Sequence[tuple[Sequence[int], Sequence[int]]], pad_id: int) -> list[ContinuationScore]:
    """``(context ids, continuation ids)`` pairs -> one `ContinuationScore` each, in order."""
    if any(not cont for _, cont in requests):
        raise ValueError("loglikelihood: a request has an empty continuation (nothing to score)")
    splits = [split_context(ctx, settings.plain_tokens) for ctx, _ in requests]
    out: dict[int, ContinuationScore] = {}
    for rows in batches([s[0] for s in splits], settings.batch_size):
        read = read_context(model, settings, [splits[i][0] for i in rows], pad_id)
        plain_ids, plain_mask = to_device(pad([splits[i][1] for i in rows], pad_id), model.device)
        cont_ids, cont_mask = to_device(pad([requests[i][1] for i in rows], pad_id), model.device)
        embeds, token_mask, labels = pack_answer_inputs(
            model.embed, model.soft_prompt if read.soft else None, plain_ids, plain_mask, cont_ids, cont_mask)
        logits, _ = model.decoder_pass(read.context, embeds, token_mask, adapter=read.adapter)
        # the token at t predicts the label at t + 1 (the continuation's tokens are labelled)
        logprobs = torch.log_softmax(logits[:, :-1].float(), dim=-1)
        targets = labels[:, 1:]
        for b, i in enumerate(rows):
            scored = targets[b].ne(-100)
            tokens = targets[b][scored]
            row = logprobs[b][scored]
            out[i] = ContinuationScore(
                logprob=float(row.gather(-1, tokens[:, None]).sum()),
                greedy=bool((row.argmax(dim=-1) == tokens).all()),
                compressed=len(splits[i][0]),
                kept=int(read.context.counts[b]),
            )
    return [out[i] for i in range(len(requests))]


@torch.no_grad()
def generate(model: Nugget2DModel, settings: HarnessSettings, contexts: Sequence[Sequence[int]],
             max_new_tokens: int, eos_id: int | None, pad_id: int) -> list[list[int]]:
    """Greedy continuations (token ids, EOS excluded) of each context, in order."""
    splits = [split_context(ctx, settings.plain_tokens) for ctx in contexts]
    out: dict[int, list[int]] = {}
    for rows in batches([s[0] for s in splits], settings.batch_size):
        read = read_context(model, settings, [splits[i][0] for i in rows], pad_id)
        plain_ids, plain_mask = to_device(pad([splits[i][1] for i in rows], pad_id), model.device)
        result = generate_from_context(
            model, read.context, plain_ids, plain_mask, max_new_tokens=max_new_tokens, eos_token_id=eos_id,
            pad_token_id=pad_id, soft_prompt=read.soft, adapter=read.adapter)
        for b, i in enumerate(rows):
            tokens = result.tokens[b].tolist()
            out[i] = tokens[: tokens.index(eos_id)] if eos_id is not None and eos_id in tokens else tokens
    return [out[i] for i in range(len(contexts))]


@torch.no_grad()
def rolling_logprob(model: Nugget2DModel, settings: HarnessSettings, ids: Sequence[int]) -> float:
    """Log-probability of ``ids[1:]`` read token by token from ``ids[0]`` (the prefix
    token) by the system's stream in the configuration `rolling_setting`."""
    from stages.nugget2d.lm.streams import make_stream, run_segment, windows

    check_rolling(settings.system)
    if settings.system == "nugget2d" and settings.threshold is None:
        raise ValueError("threshold: system nugget2d answers loglikelihood_rolling with its autoregressive "
                         "stream, which needs Lambda; the checkpoint records none (nugget2d_config.json "
                         "threshold), so pass threshold=<Lambda> (calibrate_threshold's) in model_args")
    if len(ids) < 2:
        return 0.0
    if whole_document(settings):
        return whole_logprob(model, ids, settings.max_length or model_max_length(model.lm.config))
    setting = rolling_setting(settings)
    if settings.system in KEEP_ALL_BELOW_BUDGET and len(ids) - 1 <= setting.total_states:
        # the stream never drops a position over this document: the plain LM's one causal pass
        return whole_logprob(model, ids, len(ids))
    if settings.system in WINDOW_SYSTEMS:  # a re-encoded window per token: the windows go through in batches
        window = setting.total_states if settings.system == "full" else setting.context_tokens
        ids_tensor = torch.tensor(list(ids), dtype=torch.long, device=model.device)
        return -float(window_nll(model, ids_tensor, window, None, start=1,
                                 batch_size=max(1, WINDOW_TOKENS_PER_PASS // window)).sum())
    with windows(model, setting, settings.threshold):
        stream = make_stream(settings.system, model, setting, settings.ratio, None, settings.press.sink_tokens)
        run = run_segment(stream, list(ids), 1)
    return -sum(run.nll)


@torch.no_grad()
def whole_logprob(model: Nugget2DModel, ids: Sequence[int], max_length: int) -> float:
    """Log-probability of ``ids[1:]`` under the plain base LM (every adapter off), read as lm_eval's
    ``hf`` model reads a rolling request: one teacher-forced pass per window of `rolling_windows`
    (one window, the whole document, up to ``max_length`` tokens)."""
    from nugget_core.typed_access import logits_of

    total = 0.0
    for start, first, end in rolling_windows(len(ids), max_length):
        inputs = torch.tensor([list(ids[start : end - 1])], dtype=torch.long, device=model.device)
        logprobs = torch.log_softmax(logits_of(model.lm_forward(None, input_ids=inputs))[0].float(), dim=-1)
        targets = torch.tensor(list(ids[first:end]), dtype=torch.long, device=model.device)
        # the logits at position t (of ids[start + t]) predict ids[start + t + 1]
        total += float(logprobs[first - 1 - start : end - 1 - start].gather(-1, targets[:, None]).sum())
    return total
