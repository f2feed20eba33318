"""A DPR bi-encoder (Karpukhin et al., 2020) over any two text towers.

RE §4.4 measures its embeddings by passage retrieval "as in DPR": a query tower and a
passage tower, each mapping ``(input_ids, attention_mask)`` to one vector per text,
trained so that a query's vector has the highest inner product with its positive
passage among every passage of the batch — the other queries' positives (in-batch
negatives) and each query's hard negatives. Passages of a batch are laid out as
``[positives (B); hard negatives (B x h)]``, so query ``i``'s positive is column ``i``.

With several data-parallel workers (an initialised ``torch.distributed`` process group of
more than one rank), training batches are scored as one global batch, as DPR does across
GPUs: every rank gathers every rank's query and passage vectors, so each query has the
positives and hard negatives of all ranks as negatives (``W x B x (1 + h) - 1`` of them,
RE app. B's 255 at 128 queries and one hard negative), not only its own worker's.
"""

from __future__ import annotations

from types import SimpleNamespace

import torch
import torch.distributed as dist
from torch import nn


def data_parallel_world() -> tuple[int, int]:
    """``(rank, world size)`` of the default process group; ``(0, 1)`` when there is none."""
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


def gather_with_grad(local: torch.Tensor) -> torch.Tensor:
    """Every rank's ``local`` ``[N, d]`` concatenated in rank order ``[W x N, d]`` (equal
    ``N`` on every rank), differentiable: the backward pass sums each slice's gradient
    over the ranks into its owner's ``local``. Every rank computes the same global loss, so
    a rank's gradient is ``W x`` its own slice's share, and data-parallel gradient
    averaging (DDP, DeepSpeed) yields the gradient of that loss on the concatenated batch."""
    from torch.distributed.nn.functional import all_gather

    return torch.cat(all_gather(local), dim=0)


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
        """``loss``: mean negative log-likelihood of each query's positive against all
        passages of the batch; ``logits``: the scores ``[B, 1, P]``.

        In training mode under a process group of ``W > 1`` ranks the batch is the global
        one (every rank's ``B`` queries and ``P`` passages, which must be equal on every
        rank): ``loss`` is the mean over all ``W x B`` queries against all ``W x P``
        passages, the same on every rank, and ``logits`` is ``[W x B, 1, W x P]``. In eval
        mode (dev losses, whose shards may differ in size per rank, and rank 0's probe)
        each rank scores its own batch."""
        queries = self.query(query_ids, query_mask)
        passages = self.passage(passage_ids, passage_mask)
        n_queries, n_passages = queries.shape[0], passages.shape[0]
        if n_passages < n_queries:
            raise ValueError(f"{n_queries} queries but only {n_passages} passages: the first B "
                             "passages must be the queries' positives")
        _, world = data_parallel_world()
        if self.training and world > 1:
            queries, passages = gather_with_grad(queries), gather_with_grad(passages)
        # query i of rank r: its positive is column i of rank r's passages
        offsets = torch.arange(queries.shape[0] // n_queries, device=queries.device) * n_passages
        target = (offsets[:, None] + torch.arange(n_queries, device=queries.device)).flatten()
        scores = queries @ passages.T
        loss = nn.functional.cross_entropy(scores.float(), target)
        return SimpleNamespace(loss=loss, logits=scores[:, None, :])
