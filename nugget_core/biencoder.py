"""A DPR bi-encoder (Karpukhin et al., 2020) over any two text towers.

RE §4.4 measures its embeddings by passage retrieval "as in DPR": a query tower and a
passage tower, each mapping ``(input_ids, attention_mask)`` to one vector per text,
trained so that a query's vector has the highest inner product with its positive
passage among every passage of the batch — the other queries' positives (in-batch
negatives) and each query's hard negatives. Passages of a batch are laid out as
``[positives (B); hard negatives (B x h)]``, so query ``i``'s positive is column ``i``.
"""

from __future__ import annotations

from types import SimpleNamespace

import torch
from torch import nn


class BiEncoder(nn.Module):
    """``query`` and ``passage`` towers: modules ``(input_ids [N, T], attention_mask [N, T]) -> [N, d]``."""

    def __init__(self, query: nn.Module, passage: nn.Module) -> None:
        super().__init__()
        if query is passage:
            raise ValueError("DPR trains two towers: pass two modules (a deep copy for a shared start)")
        self.query = query
        self.passage = passage

    def scores(self, query_ids: torch.Tensor, query_mask: torch.Tensor, passage_ids: torch.Tensor,
               passage_mask: torch.Tensor) -> torch.Tensor:
        """Inner products ``[B, P]`` of every query with every passage."""
        return self.query(query_ids, query_mask) @ self.passage(passage_ids, passage_mask).T

    def forward(self, query_ids: torch.Tensor, query_mask: torch.Tensor, passage_ids: torch.Tensor,
                passage_mask: torch.Tensor) -> SimpleNamespace:
        """``loss``: mean negative log-likelihood of each query's positive (column ``i`` for
        query ``i``) against all passages of the batch; ``logits``: the scores ``[B, 1, P]``."""
        scores = self.scores(query_ids, query_mask, passage_ids, passage_mask)
        if passage_ids.shape[0] < scores.shape[0]:
            raise ValueError(f"{scores.shape[0]} queries but only {passage_ids.shape[0]} passages: the first B "
                             "passages must be the queries' positives")
        target = torch.arange(scores.shape[0], device=scores.device)
        loss = nn.functional.cross_entropy(scores.float(), target)
        return SimpleNamespace(loss=loss, logits=scores[:, None, :])
