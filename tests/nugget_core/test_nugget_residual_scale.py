"""Eq. 5 of both papers: the nugget score joins q k^T before the 1/sqrt(d) scaling,
``(q k^T + s) / sqrt(d)``; HF has already scaled ``q k^T``, so the mask gets ``s / sqrt(d_head)``
(``scale_residual``, on by default; off adds ``s`` unscaled, the old behaviour)."""

from __future__ import annotations

import pytest
import torch

from nugget_core import NuggetConfig, ResidualMode, get_nugget_model
from nugget_core.nugget2d import Nugget2DConfig, Nugget2DModel


def _cross_attention_bias(model_factory, batch_factory, scale_residual: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """(bias the residual hook adds to the first cross-attention's mask, nugget scores)."""
    base = model_factory("bart", impl="eager")
    model = get_nugget_model(base, NuggetConfig(ratio=0.5, scorer_layer=1, residual=ResidualMode.DIRECT,
                                                scale_residual=scale_residual))
    cross = model.adaptor.cross_attention_modules(base)[0]
    seen: dict[str, torch.Tensor] = {}

    def record(module, args, kwargs) -> None:
        seen.setdefault("mask", kwargs["attention_mask"])

    before = cross.register_forward_pre_hook(record, with_kwargs=True)  # after the residual's: sees its output
    batch = batch_factory(base)
    nuggets = model.encode(batch["input_ids"], batch["attention_mask"])
    model(nuggets=nuggets, decoder_input_ids=batch["input_ids"][:, :3])
    before.remove()
    plain = torch.zeros_like(seen["mask"]).masked_fill(~nuggets.mask[:, None, None, :].bool(),
                                                       torch.finfo(seen["mask"].dtype).min)
    real = nuggets.mask[:, None, None, :].bool().expand_as(seen["mask"])
    return (seen["mask"] - plain)[real].view(-1), nuggets.scores[:, None, None, :].expand_as(seen["mask"])[real].view(-1)


@pytest.mark.parametrize("scale_residual", [True, False])
def test_nugget_cross_attention_gets_the_score_over_sqrt_head_dim(model_factory, batch_factory, scale_residual):
    bias, scores = _cross_attention_bias(model_factory, batch_factory, scale_residual)
    head_dim = 32 // 4  # d_model 32, 4 decoder heads (tests/nugget_core/conftest.py)
    factor = head_dim**-0.5 if scale_residual else 1.0
    torch.testing.assert_close(bias, scores * factor)


def test_nugget2d_mask_gets_the_score_over_sqrt_head_dim(causal_factory):
    lm = causal_factory()
    model = Nugget2DModel(lm, Nugget2DConfig(scorer_layer=1, lora_rank=4, residual=ResidualMode.DIRECT))
    head_dim = lm.config.hidden_size // lm.config.num_attention_heads
    assert model.residual_scale == pytest.approx(head_dim**-0.5)
    visible = torch.tensor([[[True, True, False]]])
    scores = torch.tensor([[0.8, 0.0, 2.0]])
    mask = model.attention_mask(visible, scores)
    torch.testing.assert_close(mask[0, 0, 0, :2], scores[0, :2] * head_dim**-0.5)
    unscaled = Nugget2DModel(causal_factory(), Nugget2DConfig(scorer_layer=1, lora_rank=4, residual="direct",
                                                              scale_residual=False))
    torch.testing.assert_close(unscaled.attention_mask(visible, scores)[0, 0, 0, :2], scores[0, :2])


def test_t5_scales_nothing(model_factory):
    """T5 does not divide q k^T by sqrt(d), so eq. 5 reduces to q k^T + s there."""
    model = get_nugget_model(model_factory("t5"), NuggetConfig(ratio=0.5, scorer_layer=1, residual="direct"))
    assert model.residual.scale == 1.0
