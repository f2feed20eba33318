"""Autoregressive LM systems of the perplexity evaluation (Nugget2D §5, table 1).

A context configuration fixes the number of states every system may attend to
(``total_states``): Nugget2D and Compressive attend directly to the last
``context_tokens`` tokens and to ``total_states - context_tokens`` compressed states of
the ``compressed_tokens`` before them; Full attends to the last ``total_states`` tokens
(a sliding window, so that all three hold the same number of states).

- ``nugget2d``: `Nugget2DStream` with the calibrated threshold Lambda;
- ``compressive``: `CompressiveStream` (mean-pooled chunks of ``round(1/r)`` tokens);
- ``full``: `FullStream` with a window of ``total_states``;
- ``streaming_llm`` / ``key_norm``: `PressStream`, the base LM with the last
  ``context_tokens`` tokens and ``total_states - context_tokens`` states per layer and
  KV head kept by the press among every earlier token (training-free: no adapter);
- ``nodoc`` (not a table-1 row; the harness model's reference): `FullStream` with a window of
  ``context_tokens``, the compressed part dropped.

The windows are set on a copy of the model's config for the duration of a run
(`windows`); the scorer keeps the window it was trained and calibrated with.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch

if TYPE_CHECKING:
    from typing import TypeAlias

    from nugget_core.nugget2d import (
        CompressiveStream,
        FullStream,
        Nugget2DModel,
        Nugget2DStream,
        PressStream,
    )

    # every system's stream: each steps token by token and reports the KV it holds
    LMStream: TypeAlias = FullStream | CompressiveStream | Nugget2DStream | PressStream

SYSTEMS = ("full", "compressive", "nugget2d", "streaming_llm", "key_norm")


@dataclass(frozen=True)
class ContextSetting:
    total_states: int
    compressed_tokens: int
    context_tokens: int

    @property
    def label(self) -> str:
        return f"{self.total_states}/{self.compressed_tokens}/{self.context_tokens}"


def training_notes(trained_window: int, sample_tokens: int, settings: Sequence[ContextSetting],
                   systems: Sequence[str], trained_baselines: bool) -> list[str]:
    """What each table-1 row's model saw in training against what it is evaluated with:
    one AR model (and, with ``trained_baselines``, one Compressive) trained at
    ``trained_window`` (omega_r) serves every configuration, and a trained Full that read
    whole ``sample_tokens``-token samples reads a sliding window of ``total_states`` here
    (Nugget2D §5.1 trains one configuration)."""
    notes: list[str] = []
    trained = ("nugget2d", "compressive", "full") if trained_baselines else ("nugget2d",)
    systems = [s for s in systems if s in trained]
    compressing = [s for s in ("nugget2d", "compressive") if s in systems]
    if compressing:
        other = [s.label for s in settings if s.context_tokens != trained_window]
        notes.append(f"{' and '.join(compressing)}: one model each, trained with omega_r = {trained_window} on "
                     f"{sample_tokens}-token samples, for every configuration"
                     + (f"; the {', '.join(other)} rows evaluate it at another omega_r" if other else ""))
    if "full" in systems and any(s.total_states < sample_tokens for s in settings):
        notes.append(f"full: trained attending to the whole {sample_tokens}-token sample, evaluated with a "
                     f"sliding window of {' / '.join(str(s.total_states) for s in settings)} tokens")
    return notes


@contextmanager
def windows(model: Nugget2DModel, setting: ContextSetting, threshold: float | None) -> Iterator[None]:
    """Apply ``setting`` (and Lambda; None where no Nugget2D stream runs) to ``model.config``
    inside the block."""
    original = model.config
    model.config = dataclasses.replace(
        original,
        recent_window=setting.context_tokens,
        distant_window=setting.compressed_tokens,
        max_nuggets=setting.total_states - setting.context_tokens,
        scorer_window=original.scorer_context,
        threshold=threshold,
    )
    try:
        yield
    finally:
        model.config = original


def make_stream(system: str, model: Nugget2DModel, setting: ContextSetting, ratio: float,
                adapter: str | None, sink_tokens: int = 4) -> LMStream:
    """A fresh stream of ``system`` (call inside `windows`). ``adapter`` is what the
    Full, Compressive and nodoc baselines decode with: None = the base LM, "decoder" = theta;
    the presses always decode with the base LM (``sink_tokens``: StreamingLLM's sinks)."""
    from nugget_core.nugget2d import CompressiveStream, FullStream, Nugget2DStream, PressStream

    if system == "full":
        return FullStream(model, window=setting.total_states, adapter=adapter)
    if system == "compressive":
        return CompressiveStream(model, ratio=ratio, adapter=adapter)
    if system == "nugget2d":
        return Nugget2DStream(model)
    if system in ("streaming_llm", "key_norm"):
        return PressStream(model, system, sink_tokens=sink_tokens)
    if system == "nodoc":  # the compressed part dropped: the base LM on the context window alone
        return FullStream(model, window=setting.context_tokens, adapter=adapter)
    raise ValueError(f"unknown LM system {system!r}; use one of {(*SYSTEMS, 'nodoc')}")


def attended_states(stream: LMStream) -> int:
    """KV positions (per layer) the next step's query attends to, itself included."""
    from nugget_core.nugget2d import Nugget2DStream
    from nugget_core.nugget2d.autoregressive import nugget_eligibility

    if isinstance(stream, Nugget2DStream):
        pos = stream.nugget_positions
        eligible = nugget_eligibility(
            torch.tensor([[stream.position]], device=pos.device), pos[None], torch.ones_like(pos)[None], stream.windows
        )
        return int(eligible.sum()) + stream.recent.length + 1
    return stream.kv_positions + 1


@dataclass
class SegmentRun:
    nll: list[float]  # NLL of tokens start .. n-1
    attended_states: float  # mean over the predicted tokens
    kv_bytes: float  # mean bytes held while predicting them
    ms_per_token: float  # wall time per step, all steps of the segment
    nugget_ratio: float  # fraction of tokens selected as nuggets (nugget2d), else nan


@torch.no_grad()
def run_segment(stream: LMStream, ids: Sequence[int], start: int) -> SegmentRun:
    """Feed ``ids`` token by token; score tokens from ``start`` on (they follow
    ``start`` tokens of history), recording the memory each prediction used."""
    nll, attended, held = [], [], []
    begin = time.perf_counter()
    for i, token in enumerate(ids[:-1]):
        predicts_scored = i + 1 >= start
        if predicts_scored:
            attended.append(attended_states(stream))
        if not predicts_scored and hasattr(stream, "advance"):
            stream.advance(int(token))  # history only: a windowed Full encodes nothing yet
            continue
        logits = stream.step(int(token))
        if predicts_scored:
            held.append(stream.kv_bytes())
            nll.append(float(-torch.log_softmax(logits.float(), dim=-1)[int(ids[i + 1])]))
    elapsed = time.perf_counter() - begin
    selected = getattr(stream, "selected", None)
    return SegmentRun(
        nll=nll,
        attended_states=sum(attended) / len(attended),
        kv_bytes=sum(held) / len(held),
        ms_per_token=1000 * elapsed / (len(ids) - 1),
        nugget_ratio=sum(selected) / len(selected) if selected else float("nan"),
    )
