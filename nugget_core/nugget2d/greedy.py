"""Greedy decoding for anything with a token-by-token ``step`` (the Nugget2D, Full and
Compressive streams), so every system of an evaluation decodes the same way."""

from __future__ import annotations

import torch


class GreedyStepper:
    """Mixin: ``generate`` on top of ``step(token) -> next-token logits [vocab]``."""

    def step(self, token: int) -> torch.Tensor:  # pragma: no cover - provided by subclasses
        raise NotImplementedError

    @torch.no_grad()
    def generate(
        self, prompt_ids: torch.Tensor, max_new_tokens: int, eos_token_id: int | None = None
    ) -> torch.Tensor:
        """Greedy continuation ``[new]`` of ``prompt_ids [n]`` (fed token by token)."""
        logits = None
        for token in prompt_ids.reshape(-1).tolist():
            logits = self.step(token)
        if logits is None:
            raise ValueError("empty prompt")
        out = []
        for _ in range(max_new_tokens):
            token = int(logits.argmax())
            out.append(token)
            if token == eos_token_id:
                break
            logits = self.step(token)
        return torch.tensor(out, dtype=torch.long, device=prompt_ids.device)
