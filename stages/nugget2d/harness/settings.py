"""The arguments of the ``nugget2d`` harness model, checked before any model runs, and the
rules they fix: how a request's context is split into a compressed part and a plain part
(`split_context`), the context configuration of the autoregressive stream that scores a
whole document (`rolling_setting`), and, for Full keeping every token (``ratio=1``), lm_eval's
``hf`` model's windows over the document instead (`whole_document`, `rolling_windows`).

A context of ``n`` tokens (the tokens before the continuation) is split as::

    context="whole":   [ c_1 ... c_{n-1} | c_n ]            continuation
    context="recent":  [ c_1 ... c_{n-w} | c_{n-w+1} .. c_n ] continuation      (w = recent_tokens)
                       '-- compressed --'  '--- plain ---'

The compressed part becomes the system's context (``ceil(r m)`` KV positions for its ``m``
tokens); the plain part and the continuation are read after it token by token, so the
last plain token's logits predict the continuation's first token. ``whole`` holds out one
token, as `nugget_core.nugget2d.api.compress_text` does for continuation. A context of at
most ``w`` tokens (``recent``) or of 1 token (``whole``) has nothing to compress.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from nugget_core.nugget2d.presses import PressConfig
from nugget_core.nugget2d.systems import SYSTEMS, check_system

if TYPE_CHECKING:
    from transformers import PretrainedConfig

    from stages.nugget2d.lm.streams import ContextSetting

CONTEXT_MODES = ("recent", "whole")
#: the default plain window: the question or sentence a continuation follows stays readable,
#: and at r = 0.1 the rolling stream's configuration is Nugget2D table 1's 64/320/32
RECENT_TOKENS = 32
#: systems with a token-by-token stream (SnapKV ranks by the queries of a prompt's end)
ROLLING_SYSTEMS = ("nugget2d", "full", "nodoc", "streaming_llm", "key_norm")
#: systems whose decoder is the plain base LM: an HF folder with no Nugget2D parts serves them
BASE_LM_SYSTEMS = tuple(s for s in SYSTEMS if s != "nugget2d")
#: lm_eval's HFLM: the config attributes naming a context length, in its order, its default
#: without one, and the ``model_max_length`` a tokenizer without a limit reports
_LENGTH_ATTRS = ("n_positions", "max_position_embeddings", "n_ctx")
DEFAULT_MAX_LENGTH = 2048
_TOKENIZER_INFINITY = 1000000000000000019884624838656


@dataclass(frozen=True)
class HarnessSettings:
    """What the harness model does with each request (docs/harness.md, model_args)."""

    system: str
    ratio: float
    context: str = "recent"
    recent_tokens: int = RECENT_TOKENS
    threshold: float | None = None
    compressed_tokens: int | None = None
    batch_size: int = 1
    max_gen_toks: int = 256
    soft_prompt: bool = False
    press: PressConfig = PressConfig()
    max_length: int | None = None  # Full at r = 1 on rolling requests: lm_eval's window (None: the LM's)

    def __post_init__(self) -> None:
        check_system(self.system)
        if self.context not in CONTEXT_MODES:
            raise ValueError(f"context: unknown value {self.context!r}; use one of {CONTEXT_MODES}")
        if isinstance(self.ratio, bool) or not isinstance(self.ratio, int | float) or not 0.0 < self.ratio <= 1.0:
            raise ValueError(f"ratio: value {self.ratio!r} must be a number in (0, 1]")
        for name in ("recent_tokens", "batch_size", "max_gen_toks"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name}: value {value!r} must be an int >= 1")
        if self.compressed_tokens is not None and (
                isinstance(self.compressed_tokens, bool) or not isinstance(self.compressed_tokens, int)
                or self.compressed_tokens < 1):
            raise ValueError(f"compressed_tokens: value {self.compressed_tokens!r} must be an int >= 1 or None")
        if self.max_length is not None and (
                isinstance(self.max_length, bool) or not isinstance(self.max_length, int) or self.max_length < 1):
            raise ValueError(f"max_length: value {self.max_length!r} must be an int >= 1 or None")
        if self.threshold is not None and not math.isfinite(float(self.threshold)):
            raise ValueError(f"threshold: value {self.threshold!r} must be a finite number")

    @property
    def plain_tokens(self) -> int:
        """Context tokens read plainly after the compressed part."""
        return 1 if self.context == "whole" else self.recent_tokens


def split_context(ids: Sequence[int], plain_tokens: int) -> tuple[list[int], list[int]]:
    """``(compressed, plain)`` parts of a context's token ids (module docstring); a context
    needs at least one token, the one whose logits predict the continuation."""
    if not ids:
        raise ValueError("split_context: the context has no tokens")
    cut = max(len(ids) - plain_tokens, 0)
    return list(ids[:cut]), list(ids[cut:])


def whole_document(settings: HarnessSettings) -> bool:
    """Whether ``loglikelihood_rolling`` reads the whole document as lm_eval's ``hf`` model does
    (`rolling_windows`) rather than through a stream at a budget (`rolling_setting`): Full
    keeping every token (``ratio=1``, eval_harness's ``full_whole`` row), unless
    ``compressed_tokens`` asks for a window explicitly."""
    return settings.system == "full" and settings.ratio == 1.0 and settings.compressed_tokens is None


def model_max_length(hf_config: PretrainedConfig, tokenizer: Any = None, default: int = DEFAULT_MAX_LENGTH) -> int:
    """The LM's context length as lm_eval's HFLM resolves it (``max_length`` unset): the first of
    `_LENGTH_ATTRS` on the config (its ``text_config`` first), else the tokenizer's
    ``model_max_length`` unless unlimited, else ``default``."""
    cfg = getattr(hf_config, "text_config", None) or hf_config
    for attr in _LENGTH_ATTRS:
        value = getattr(cfg, attr, None)
        if value is not None:
            return int(value)
    length = getattr(tokenizer, "model_max_length", None)
    return int(length) if length is not None and length != _TOKENIZER_INFINITY else default


def rolling_windows(n: int, max_length: int) -> list[tuple[int, int, int]]:
    """lm_eval's ``hf`` windows over ``n`` token ids, the prefix token first
    (``get_rolling_token_windows(context_len=1)`` + ``make_disjoint_window``, as
    ``HFLM.loglikelihood_rolling`` feeds them to one forward pass each), as
    ``(start, first, end)``: the LM reads ``ids[start:end - 1]`` and scores ``ids[first:end]``.

    Up to ``max_length`` document tokens this is one window, every token reading all the tokens
    before it. Past it the document is scored in further windows of ``max_length`` tokens,
    each read from its start with one token of context (the token before it), the last
    window reading a full ``max_length`` tokens and scoring only the ones not scored yet."""
    tokens = n - 1
    if tokens <= 0:
        return []
    first = min(max_length, tokens)
    out = [(0, 1, first + 1)]
    predicted = first
    while predicted < tokens:
        scored = min(tokens - predicted, max_length)
        end = predicted + scored
        out.append((end - max_length, end - scored + 1, end + 1))
        predicted = end
    return out


def rolling_setting(settings: HarnessSettings) -> ContextSetting:
    """The context configuration of ``loglikelihood_rolling``'s streams, as eval_lm's: the
    last ``recent_tokens`` tokens are attended directly, and ``ceil(r C)`` states stand for
    the ``C = compressed_tokens`` tokens before them (default ``C = ceil(recent_tokens / r)``,
    Nugget2D table 1's 640 = 64 / 0.1); Full keeps a window of the same total. Full at
    ``ratio=1`` without ``compressed_tokens`` uses no stream (`whole_document`)."""
    import torch

    from nugget_core.nuggets import nugget_counts
    from stages.nugget2d.lm.streams import ContextSetting

    context = settings.recent_tokens
    compressed = settings.compressed_tokens or math.ceil(context / settings.ratio - 1e-9)
    states = int(nugget_counts(torch.ones(1, compressed, device="cpu"), settings.ratio)[0])
    return ContextSetting(total_states=context + states, compressed_tokens=compressed, context_tokens=context)


def check_rolling(system: str) -> None:
    """A clear error for a system with no token-by-token form."""
    if system not in ROLLING_SYSTEMS:
        raise ValueError(f"system {system!r} cannot answer loglikelihood_rolling: SnapKV ranks positions by the "
                         "attention of a prompt's last tokens, which a token-by-token stream does not have; "
                         f"rolling systems: {ROLLING_SYSTEMS}")
