"""Beam search for the RE decoders (paper table 6: 4 beams, early stopping).

One implementation drives all three decoders through a `StepDecoder` (start / step /
reorder over a KV cache), so input, cross and gating decoders are compared under the same
decoding algorithm. It follows the classic Hugging Face beam search:

- each step expands every live beam by every token and keeps the ``2 * num_beams`` best
  continuations by summed log-probability; an EOS among the first ``num_beams`` of them
  ends a hypothesis, the best ``num_beams`` others continue;
- a finished hypothesis of ``n`` generated tokens (EOS included) scores
  ``sum_logprobs / n ** length_penalty``; each sequence keeps its ``num_beams`` best;
- ``early_stopping=True``: a sequence is done once it has ``num_beams`` finished
  hypotheses; ``False``: once no live beam can still beat the worst of them (HF's
  heuristic: the live beam's score at the current length);
- at ``max_new_tokens`` the live beams of unfinished sequences join the hypotheses
  (without EOS) and the best hypothesis is returned.

``num_beams=1`` is greedy decoding (argmax until EOS).
"""

from __future__ import annotations

from typing import Protocol

import torch


class StepDecoder(Protocol):
    def start(self) -> torch.Tensor:
        """Logits ``[rows, vocab]`` of the first token."""
        ...

    def step(self, tokens: torch.Tensor) -> torch.Tensor:
        """Feed ``tokens [rows]`` -> logits ``[rows, vocab]`` of the next token."""
        ...

    def reorder(self, rows: torch.Tensor) -> None:
        """Row ``i`` continues the state of row ``rows[i]``."""
        ...


class _Hypotheses:
    """The best ``size`` finished hypotheses of one sequence."""

    def __init__(self, size: int, length_penalty: float, early_stopping: bool) -> None:
        self.size, self.length_penalty, self.early_stopping = size, length_penalty, early_stopping
        self.items: list[tuple[float, list[int]]] = []

    def add(self, tokens: list[int], sum_logprobs: float) -> None:
        self.items.append((sum_logprobs / len(tokens) ** self.length_penalty, tokens))
        self.items.sort(key=lambda item: item[0], reverse=True)
        del self.items[self.size :]

    def is_done(self, best_live_sum: float, length: int) -> bool:
        if len(self.items) < self.size:
            return False
        if self.early_stopping:
            return True
        return self.items[-1][0] >= best_live_sum / length**self.length_penalty

    def best(self) -> list[int]:
        return self.items[0][1]


def beam_search(
    decoder: StepDecoder,
    batch_size: int,
    num_beams: int,
    max_new_tokens: int,
    eos_token_id: int,
    pad_token_id: int,
    early_stopping: bool = True,
    length_penalty: float = 1.0,
) -> torch.Tensor:
    """Token ids ``[batch, L]`` of the best hypothesis per sequence: the generated tokens
    only (no decoder start), ending with EOS unless cut at ``max_new_tokens``, right-padded
    with ``pad_token_id``. ``decoder`` holds ``batch_size * num_beams`` rows, beams of one
    sequence adjacent."""
    if num_beams < 1 or max_new_tokens < 1:
        raise ValueError(f"beam_search: num_beams={num_beams} and max_new_tokens={max_new_tokens} must be >= 1")
    logits = decoder.start()
    device, vocab = logits.device, logits.shape[-1]
    if 2 * num_beams > vocab:
        raise ValueError(f"beam_search: num_beams={num_beams} needs a vocabulary of at least {2 * num_beams}")
    hypotheses = [_Hypotheses(num_beams, length_penalty, early_stopping) for _ in range(batch_size)]
    done = [False] * batch_size
    # Only the first beam is live at the start (the others would repeat it).
    beam_scores = torch.full((batch_size, num_beams), float("-inf"), device=device)
    beam_scores[:, 0] = 0.0
    sequences = torch.empty(batch_size * num_beams, 0, dtype=torch.long, device=device)
    for length in range(1, max_new_tokens + 1):
        logprobs = torch.log_softmax(logits.float(), dim=-1)
        candidates = (beam_scores.view(-1, 1) + logprobs).view(batch_size, num_beams * vocab)
        top_scores, top_index = candidates.topk(2 * num_beams, dim=1)
        top_scores_l, top_index_l = top_scores.tolist(), top_index.tolist()
        # Built as Python lists (one transfer per step, not one tiny write per beam).
        next_scores = [[0.0] * num_beams for _ in range(batch_size)]
        next_tokens = [[pad_token_id] * num_beams for _ in range(batch_size)]
        next_rows = [[b * num_beams + k for k in range(num_beams)] for b in range(batch_size)]
        for b in range(batch_size):
            if done[b]:
                continue  # its rows keep decoding padding; their results are never read
            kept = 0
            for rank, (score, index) in enumerate(zip(top_scores_l[b], top_index_l[b], strict=True)):
                row, token = b * num_beams + index // vocab, index % vocab
                if token == eos_token_id:
                    if rank < num_beams:
                        hypotheses[b].add(sequences[row].tolist() + [token], score)
                    continue
                next_scores[b][kept], next_tokens[b][kept], next_rows[b][kept] = score, token, row
                kept += 1
                if kept == num_beams:
                    break
            done[b] = hypotheses[b].is_done(next_scores[b][0], length)
        rows = torch.tensor(next_rows, dtype=torch.long, device=device).view(-1)
        tokens = torch.tensor(next_tokens, dtype=torch.long, device=device).view(-1)
        sequences = torch.cat([sequences.index_select(0, rows), tokens[:, None]], dim=1)
        beam_scores = torch.tensor(next_scores, device=device)
        if all(done) or length == max_new_tokens:
            break
        decoder.reorder(rows)
        logits = decoder.step(tokens)
    for b in range(batch_size):
        if not done[b]:
            for k in range(num_beams):
                hypotheses[b].add(sequences[b * num_beams + k].tolist(), float(beam_scores[b, k]))
    best = [h.best() for h in hypotheses]
    width = max(len(hypothesis) for hypothesis in best)
    padded = [hypothesis + [pad_token_id] * (width - len(hypothesis)) for hypothesis in best]
    return torch.tensor(padded, dtype=torch.long, device=device)
