"""The arguments of the ``nugget2d`` harness model, checked before any model runs, and the
two rules they fix: how a request's context is split into a compressed part and a plain
part (`split_context`), and the context configuration of the autoregressive stream that
scores a whole document (`rolling_setting`).

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
from typing import TYPE_CHECKING

from nugget_core.nugget2d.presses import PressConfig
from nugget_core.nugget2d.systems import SYSTEMS, check_system

if TYPE_CHECKING:
    from stages.nugget2d.lm.streams import ContextSetting

CONTEXT_MODES = ("recent", "whole")
#: the default plain window: the question or sentence a continuation follows stays readable,
#: and at r = 0.1 the rolling stream's configuration is Nugget2D table 1's 64/320/32
RECENT_TOKENS = 32
#: systems with a token-by-token stream (SnapKV ranks by the queries of a prompt's end)
ROLLING_SYSTEMS = ("nugget2d", "full", "nodoc", "streaming_llm", "key_norm")
#: systems whose decoder is the plain base LM: an HF folder with no Nugget2D parts serves them
BASE_LM_SYSTEMS = tuple(s for s in SYSTEMS if s != "nugget2d")


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


def rolling_setting(settings: HarnessSettings) -> ContextSetting:
    """The context configuration of ``loglikelihood_rolling``'s streams, as eval_lm's: the
    last ``recent_tokens`` tokens are attended directly, and ``ceil(r C)`` states stand for
    the ``C = compressed_tokens`` tokens before them (default ``C = ceil(recent_tokens / r)``,
    Nugget2D table 1's 640 = 64 / 0.1); Full keeps a window of the same total."""
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
