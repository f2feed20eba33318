"""DPR's global in-batch negatives (RE §4.4, app. B): with two data-parallel workers (gloo,
CPU, DDP) each query is scored against both workers' passages, and the training loss and
DDP-averaged gradients equal those of one process on the concatenated batch."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
import torch.multiprocessing as mp
from torch import nn

from nugget_core.biencoder import BiEncoder

WORLD, B, H, T, VOCAB, DIM = 2, 3, 1, 5, 50, 8  # per rank: 3 queries, 3 positives + 3 hard negatives


class Tower(nn.Module):
    """Masked mean of token embeddings, projected: ``[N, T] -> [N, d]``."""

    def __init__(self) -> None:
        super().__init__()
        self.embed, self.proj = nn.Embedding(VOCAB, DIM), nn.Linear(DIM, DIM)

    def forward(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        m = mask[..., None].float()
        return self.proj((self.embed(ids) * m).sum(1) / m.sum(1))


def _model() -> BiEncoder:
    torch.manual_seed(0)
    return BiEncoder(Tower(), Tower())


def _rank_batch(rank: int) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(100 + rank)
    q = torch.randint(1, VOCAB, (B, T), generator=g)
    p = torch.randint(1, VOCAB, (B * (1 + H), T), generator=g)
    qm, pm = torch.ones_like(q), torch.ones_like(p)
    qm[0, 3:] = 0  # some padding
    pm[1, 2:] = 0
    return {"query_ids": q, "query_mask": qm, "passage_ids": p, "passage_mask": pm}


def _worker(rank: int, init_file: str, out: str) -> None:
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel

    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=WORLD)
    model = DistributedDataParallel(_model())
    out_train = model(**_rank_batch(rank))
    out_train.loss.backward()  # DDP averages the gradients over the ranks
    model.eval()
    with torch.no_grad():
        local = model(**_rank_batch(rank))  # eval: each rank's own batch (uneven dev shards never hang)
    if rank == 0:
        torch.save({"loss": out_train.loss.detach(), "logits": out_train.logits.shape,
                    "eval_logits": local.logits.shape, "eval_loss": local.loss,
                    "grads": {n: p.grad for n, p in model.module.named_parameters()}}, out)
    dist.destroy_process_group()


def _concatenated() -> tuple[torch.Tensor, dict[str, torch.Tensor], torch.Tensor]:
    """One process, the two ranks' batches as one: [all positives; all hard negatives]."""
    batches = [_rank_batch(r) for r in range(WORLD)]
    cat = lambda key, rows: torch.cat([b[key][rows] for b in batches])  # noqa: E731
    pos, hard = slice(0, B), slice(B, None)
    batch = {"query_ids": cat("query_ids", slice(None)), "query_mask": cat("query_mask", slice(None)),
             "passage_ids": torch.cat([cat("passage_ids", pos), cat("passage_ids", hard)]),
             "passage_mask": torch.cat([cat("passage_mask", pos), cat("passage_mask", hard)])}
    model = _model()
    loss = model(**batch).loss
    loss.backward()
    own = _model()(**batches[0]).loss  # rank 0's batch alone (the old, per-worker loss)
    return loss.detach(), {n: p.grad for n, p in model.named_parameters()}, own.detach()


@pytest.mark.timeout(60)
def test_two_workers_score_the_global_batch_like_one_process(tmp_path: Path):
    out = tmp_path / "rank0.pt"
    mp.spawn(_worker, args=(str(tmp_path / "init"), str(out)), nprocs=WORLD, join=True)
    got = torch.load(out, weights_only=False)
    loss, grads, per_worker = _concatenated()
    assert got["logits"] == (WORLD * B, 1, WORLD * B * (1 + H))  # 2 x 3 x 2 - 1 = 11 negatives per query
    assert got["eval_logits"] == (B, 1, B * (1 + H))
    torch.testing.assert_close(got["eval_loss"], per_worker)
    torch.testing.assert_close(got["loss"], loss)
    assert not torch.isclose(loss, per_worker)  # the global batch's loss is not one worker's
    assert grads.keys() == got["grads"].keys()
    for name, grad in grads.items():
        torch.testing.assert_close(got["grads"][name], grad, msg=name)
