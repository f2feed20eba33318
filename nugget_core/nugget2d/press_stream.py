"""`PressStream`: a token-by-token LM whose distant memory is kept by a training-free
KV press (`nugget_core.nugget2d.presses`), at the budget of Nugget2D's autoregressive mode.

Like `CompressiveStream`, the last ``recent_window - 1`` tokens are attended directly;
a token leaving that window joins the memory with the KV it was computed with, and
whenever the memory exceeds ``max_nuggets`` positions per layer, each layer and KV head
keeps the ``max_nuggets`` that the press ranks first (``streaming_llm``: the stream's
first ``sink_tokens`` then the most recent; ``key_norm``: the smallest keys). A press
chooses among every token that left the window, with no distant-window limit: the
attention sinks of StreamingLLM are the stream's first tokens. SnapKV needs the
queries of a prompt's end and has no token-by-token form here (its streaming analogue
is H2O's accumulated attention, a different method).
"""

from __future__ import annotations

import torch

from .baselines import WindowStream
from .kv import LayerKV
from .model import Nugget2DModel
from .presses import STREAMING_PRESSES, check_press, press_layer


class PressStream(WindowStream):
    """Recent window + a press-kept memory of ``max_nuggets`` positions (module docstring)."""

    def __init__(self, model: Nugget2DModel, press: str, sink_tokens: int = 4, adapter: str | None = None) -> None:
        check_press(press, STREAMING_PRESSES)
        config = model.config
        if config.recent_window is None or config.max_nuggets is None:
            raise ValueError(f"PressStream({press!r}): Nugget2DConfig.recent_window and max_nuggets must be set "
                             f"(the direct window and the memory budget), got {config.recent_window} / "
                             f"{config.max_nuggets}")
        super().__init__(model, config.recent_window, adapter)
        self.press = press
        self.sink_tokens = sink_tokens
        self.budget = config.max_nuggets
        self.memory_positions: list[torch.Tensor] = []  # per layer [1, kv_heads, m]: text positions

    def _evicted(self, evicted: LayerKV) -> None:
        start = self.position - (self.recent_window - 1) - evicted.length + 1
        device = evicted.keys[0].device
        new = torch.arange(start, start + evicted.length, device=device)[None, None]
        new = new.expand(1, evicted.keys[0].shape[1], -1)
        self.memory = self.memory.cat(evicted)
        self.memory_positions = ([torch.cat([p, new], dim=2) for p in self.memory_positions]
                                 or [new] * len(evicted.keys))
        if self.memory.length <= self.budget:
            return
        if self.budget == 0:
            self.memory, self.memory_positions = LayerKV([], []), []
            return
        keep = [press_layer(self.press, k, p, self.budget, self.sink_tokens)
                for k, p in zip(self.memory.keys, self.memory_positions, strict=True)]
        self.memory = self.memory.gather_heads(keep)
        self.memory_positions = [torch.gather(p, 2, i) for p, i in zip(self.memory_positions, keep, strict=True)]
