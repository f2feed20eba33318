"""Baselines with the same streaming interface as `Nugget2DStream` (``step``,
``generate``, ``kv_positions``, ``kv_bytes``), so autoregressive evaluations compare
like with like, plus `stream_nll` to score a sequence with any of them.

- `FullStream`: the LM without compression, or with a bounded state of ``window`` tokens
  ("Full" in the paper's table 1 reads the last tokens): at every step the window's
  tokens are encoded afresh from position 0, as an LM given only that text. A rolling KV
  cache instead would keep keys computed with tokens already evicted and drop the first
  tokens the LM attends to as a sink, which costs perplexity (docs/algorithms.md).
- `CompressiveStream` (Rae et al., 2020, mean pooling): tokens leaving the recent
  window are pooled in fixed chunks of ``round(1 / r)`` tokens, one memory slot per chunk
  and layer, so the distant part has the same ratio as Nugget2D. Keys are pooled before
  the rotary embedding (un-rotated, averaged, re-rotated at the chunk's last position):
  an average of keys rotated to different positions is not a key at any position.
  `nugget_core.nugget2d.compressive` computes the same function in one parallel pass
  (training).
"""

from __future__ import annotations

import torch
from transformers import DynamicCache
from transformers.modeling_outputs import CausalLMOutput

from ..typed_access import dynamic_cache_of, logits_of
from .autoregressive import last_tokens_nll
from .bias import nugget_attention_mask
from .compressive import CompressiveLayout, compressive_forward, pool_chunks
from .config import DECODER
from .greedy import GreedyStepper
from .kv import LayerKV
from .model import Nugget2DModel


class WindowStream(GreedyStepper):
    """Shared decoding loop: attend to ``memory + recent`` and append the new token;
    tokens leaving a ``window`` go to `_evicted` (the memory policy of a subclass)."""

    def __init__(self, model: Nugget2DModel, window: int | None, adapter: str | None) -> None:
        self.model = model
        self.window = window
        self.adapter = adapter
        self.position = 0
        self.recent = LayerKV([], [])
        self.memory = LayerKV([], [])

    @property
    def recent_window(self) -> int:
        """``window``, for the streams that evict (only those have one)."""
        if self.window is None:
            raise RuntimeError(f"{type(self).__name__} keeps every token: it has no recent window")
        return self.window

    @property
    def kv_positions(self) -> int:
        return self.recent.length + self.memory.length

    def kv_bytes(self) -> int:
        return self.recent.nbytes() + self.memory.nbytes()

    def _evicted(self, evicted: LayerKV) -> None:
        """Tokens that left the recent window (dropped unless a subclass keeps them)."""

    @torch.no_grad()
    def step(self, token_id: int | torch.Tensor) -> torch.Tensor:
        model = self.model
        device = model.soft_prompt.device
        token = torch.as_tensor(token_id, device=device).reshape(1, 1)
        past = self.memory.cat(self.recent)
        cache = past.to_cache() if past.keys else DynamicCache()
        visible = torch.ones(1, 1, past.length + 1, dtype=torch.bool, device=device)
        out = model.lm_forward(
            self.adapter,
            input_ids=token,
            attention_mask=nugget_attention_mask(visible, model.dtype),
            position_ids=torch.full((1, 1), self.position, device=device),
            past_key_values=cache,
            use_cache=True,
        )
        self.recent = self.recent.cat(LayerKV.from_cache(cache).slice(past.length))
        if self.window is not None and self.recent.length > self.window - 1:
            cut = self.recent.length - (self.window - 1)
            self._evicted(self.recent.slice(0, cut))
            self.recent = self.recent.slice(cut)
        self.position += 1
        return logits_of(out)[0, 0]


class FullStream(WindowStream):
    """No compression; ``window=None`` keeps every token (memory grows), a ``window``
    re-encodes the last ``window`` tokens at each step (module docstring).
    ``reencode=False`` keeps a rolling KV window instead: not the paper's Full, but what
    `CompressiveStream` at ratio 1 reduces to (a consistency check of its memory)."""

    def __init__(
        self, model: Nugget2DModel, window: int | None = None, adapter: str | None = None,
        reencode: bool = True,
    ) -> None:
        super().__init__(model, window, adapter)
        self.reencode = reencode and window is not None
        self.tokens: list[int] = []  # the window's tokens (re-encoding mode)
        self._window_bytes = 0

    @property
    def kv_positions(self) -> int:
        """Positions the next prediction reads besides its own token (as a rolling window's
        cache holds them)."""
        return min(len(self.tokens), self.recent_window - 1) if self.reencode else super().kv_positions

    def kv_bytes(self) -> int:
        return self._window_bytes if self.reencode else super().kv_bytes()

    def advance(self, token_id: int | torch.Tensor) -> None:
        """Read a token whose next-token prediction is not needed (a history token): a
        re-encoding window encodes nothing until a prediction asks for it."""
        if not self.reencode:
            self.step(token_id)
            return
        token = token_id if isinstance(token_id, int) else int(token_id.reshape(-1)[0])
        self.tokens = (self.tokens + [token])[-self.recent_window :]
        self.position += 1

    @torch.no_grad()
    def step(self, token_id: int | torch.Tensor) -> torch.Tensor:
        if not self.reencode:
            return super().step(token_id)
        model = self.model
        self.advance(token_id)  # the window now ends with this token
        ids = torch.tensor([self.tokens], device=model.device)
        out = model.lm_forward(
            self.adapter, input_ids=ids, position_ids=torch.arange(ids.shape[1], device=ids.device)[None],
            use_cache=True,
        )
        self._window_bytes = LayerKV.from_cache(dynamic_cache_of(out)).nbytes()
        return logits_of(out)[0, -1]


class CompressiveStream(WindowStream):
    """Recent window + mean-pooled memory of the distant tokens (see module docstring)."""

    def __init__(
        self,
        model: Nugget2DModel,
        ratio: float | None = None,
        adapter: str | None = DECODER,
    ) -> None:
        layout = CompressiveLayout.from_config(model.config, ratio)
        super().__init__(model, layout.window, adapter)
        self.chunk, self.max_slots = layout.chunk, layout.max_slots
        self.pending = LayerKV([], [])
        self.pending_start = 0  # position of the first pending token

    def _pool(self, block: LayerKV, first: int) -> LayerKV:
        positions = torch.arange(first, first + block.length, device=block.keys[0].device)
        cos, sin = self.model.rotary(positions[None])
        pooled = [pool_chunks(k, v, cos[:, None], sin[:, None], self.chunk)
                  for k, v in zip(block.keys, block.values, strict=True)]
        return LayerKV([k for k, _ in pooled], [v for _, v in pooled])

    def _evicted(self, evicted: LayerKV) -> None:
        if self.pending.length == 0:
            self.pending_start = self.position - (self.recent_window - 1) - evicted.length + 1
        self.pending = self.pending.cat(evicted)
        while self.pending.length >= self.chunk:
            slot = self._pool(self.pending.slice(0, self.chunk), self.pending_start)
            self.memory = self.memory.cat(slot)
            self.pending = self.pending.slice(self.chunk)
            self.pending_start += self.chunk
        if self.max_slots is not None and self.memory.length > self.max_slots:
            self.memory = self.memory.slice(self.memory.length - self.max_slots)

    def kv_bytes(self) -> int:
        return super().kv_bytes() + self.pending.nbytes()


BASELINE_SYSTEMS = ("full", "compressive")


def baseline_lm_loss(
    model: Nugget2DModel, system: str, input_ids: torch.Tensor, predict_last: int, ratio: float | None = None
) -> CausalLMOutput:
    """Training pass of an LM baseline with theta: ``full`` (the LM over the whole sample,
    from position 0) or ``compressive`` (`compressive_forward`: recent window + pooled
    memory at ``ratio``) on ``input_ids [batch, T]``; ``loss`` = the mean NLL of the last
    ``predict_last`` tokens, as `ar_loss` scores the autoregressive model."""
    if system == "compressive":
        out = compressive_forward(model, input_ids, ratio=ratio, adapter=DECODER)
    elif system == "full":
        out = model.lm_forward(DECODER, input_ids=input_ids)
    else:
        raise ValueError(f"LM baseline {system!r}: expected one of {BASELINE_SYSTEMS}")
    return CausalLMOutput(loss=last_tokens_nll(out.logits, input_ids, predict_last), logits=out.logits)


@torch.no_grad()
def stream_nll(stream: object, input_ids: torch.Tensor, start: int = 1) -> torch.Tensor:
    """Per-token NLL ``[n - start]`` of ``input_ids [n]`` under a fresh ``stream``
    (`Nugget2DStream`, `FullStream` or `CompressiveStream`), from token ``start`` on."""
    ids = input_ids.reshape(-1).tolist()
    nll = []
    for i, token in enumerate(ids[:-1]):
        logits = stream.step(token)  # type: ignore[attr-defined]
        if i + 1 >= start:
            nll.append(-torch.log_softmax(logits.float(), dim=-1)[ids[i + 1]])
    return torch.stack(nll)


@torch.no_grad()
def window_nll(model: Nugget2DModel, input_ids: torch.Tensor, window: int, adapter: str | None = None,
               start: int = 1, batch_size: int = 32) -> torch.Tensor:
    """`stream_nll` of a re-encoding `FullStream` (``window`` tokens, ``adapter``), computed in
    passes over many tokens: token ``t``'s prediction reads the window ending at ``t`` as a text of
    its own (positions from 0). While ``t <= window`` that window is the whole prefix, and one
    causal pass over the first ``window`` tokens gives all those predictions (a causal LM's
    prediction at a position reads only the tokens before it). Later windows are independent
    texts, ``batch_size`` of them per pass; only their last position's logits are computed
    (``logits_to_keep=1``). Returns ``[n - start]`` NLLs, equal to the stream's up to float
    rounding of the batched matmuls."""
    if window < 1:
        raise ValueError(f"window_nll: window {window} must be >= 1")
    ids = input_ids.reshape(-1).tolist()
    device = model.device
    targets = list(range(max(start, 1), len(ids)))  # the prediction of ids[t] reads ids[..t - 1]
    nll: list[torch.Tensor] = []
    prefix = [t for t in targets if t <= window]
    if prefix:
        tokens = torch.tensor([ids[: prefix[-1]]], dtype=torch.long, device=device)
        logits = logits_of(model.lm_forward(adapter, input_ids=tokens, use_cache=False))[0]
        logprobs = torch.log_softmax(logits[[t - 1 for t in prefix]].float(), dim=-1)
        wanted = torch.tensor([ids[t] for t in prefix], dtype=torch.long, device=device)
        nll.append(-logprobs.gather(-1, wanted[:, None])[:, 0])
    later = [t for t in targets if t > window]  # full windows: ids[t - window : t], positions 0 .. window - 1
    for first in range(0, len(later), batch_size):
        ends = later[first : first + batch_size]
        tokens = torch.tensor([ids[t - window : t] for t in ends], dtype=torch.long, device=device)
        out = model.lm_forward(adapter, input_ids=tokens, use_cache=False, logits_to_keep=1)
        logprobs = torch.log_softmax(logits_of(out)[:, -1].float(), dim=-1)
        wanted = torch.tensor([ids[t] for t in ends], dtype=torch.long, device=device)
        nll.append(-logprobs.gather(-1, wanted[:, None])[:, 0])
    return torch.cat(nll) if nll else torch.zeros(0, device=device)
