"""Precision and clipping settings of both training backends, on CPU (no Ray, no GPU):
``precision=bf16`` is autocast for DDP and runs the real Nugget / Nugget2D losses;
``max_grad_norm`` clips; DeepSpeed's config carries both."""

from __future__ import annotations

import pytest
import torch

from stages.common.device import autocast
from stages.config import load_config
from stages.training.engine import DDPEngine, deepspeed_config
from tests.training.fixtures import nugget_job

CPU = torch.device("cpu")


class Regressor(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.layer = torch.nn.Linear(8, 1)
        self.seen: list[torch.dtype] = []

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.layer(x)
        self.seen.append(out.dtype)
        return out


def _loss(model, batch):
    return ((model(batch["x"]).float() - batch["y"]) ** 2).mean()


def _grad_norms(engine: DDPEngine) -> list[float]:
    """Record the global gradient norm the optimiser steps with."""
    norms: list[float] = []
    step = engine.optimizer.step

    def recording_step(*args, **kwargs):
        grads = [p.grad for p in engine.module.parameters() if p.grad is not None]
        norms.append(float(torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g) for g in grads]))))
        return step(*args, **kwargs)

    engine.optimizer.step = recording_step
    return norms


def test_ddp_bf16_is_autocast_with_fp32_weights_on_cpu():
    torch.manual_seed(0)
    model = Regressor()
    engine = DDPEngine(model, nugget_job(precision="bf16", lr=1e-2), find_unused=False, device=CPU)
    batch = {"x": torch.randn(16, 8), "y": torch.randn(16, 1)}
    losses = [engine.train_step([batch], 1e-2, _loss) for _ in range(20)]
    assert model.seen[0] is torch.bfloat16  # the forward ran in bf16
    assert model.layer.weight.dtype is torch.float32  # the weights (and Adam state) did not
    assert losses[-1] < losses[0]
    with engine.autocast():  # what the loop wraps dev losses and probe logits in
        assert model(batch["x"]).dtype is torch.bfloat16


def test_fp32_runs_without_autocast():
    model = Regressor()
    engine = DDPEngine(model, nugget_job(precision="fp32"), find_unused=False, device=CPU)
    engine.train_step([{"x": torch.randn(4, 8), "y": torch.randn(4, 1)}], 1e-3, _loss)
    assert model.seen == [torch.float32]


@pytest.mark.parametrize("max_norm", [None, 1e-3])
def test_max_grad_norm_clips_before_the_step(max_norm):
    torch.manual_seed(0)
    model = Regressor()
    engine = DDPEngine(model, nugget_job(max_grad_norm=max_norm), find_unused=False, device=CPU)
    norms = _grad_norms(engine)
    engine.train_step([{"x": 10 * torch.randn(16, 8), "y": torch.randn(16, 1)}], 1e-3, _loss)
    if max_norm is None:
        assert norms[0] > 1.0  # unclipped: the raw gradient of large inputs
    else:
        assert norms[0] == pytest.approx(max_norm, rel=1e-3)


def test_deepspeed_config_follows_thenugget_job():
    config = deepspeed_config(nugget_job(precision="bf16", max_grad_norm=1.0, batch_size=4, grad_accum=2))
    assert config["bf16"] == {"enabled": True} and config["gradient_clipping"] == 1.0
    assert config["zero_optimization"]["stage"] == 2
    assert config["train_micro_batch_size_per_gpu"] == 4 and config["gradient_accumulation_steps"] == 2
    plain = deepspeed_config(nugget_job())
    assert plain["bf16"] == {"enabled": False} and plain["gradient_clipping"] == 0.0


def test_max_grad_norm_must_be_positive():
    from stages.config.validate import ConfigError

    with pytest.raises(ConfigError, match=r"train.nugget.max_grad_norm: value 0.0 must be > 0.0"):
        load_config(["train.nugget.max_grad_norm=0.0"])


def test_nugget2d_losses_run_under_cpu_bf16_autocast():
    """The compressor objective and the autoregressive loss (float attention masks, scores
    as a residual on the logits) train under bf16 autocast, and the scorer gets gradients."""
    from nugget_core.nugget2d import Nugget2DConfig, Nugget2DModel
    from nugget_core.nugget2d.autoregressive import ar_loss
    from nugget_core.nugget2d.objectives import objective_loss, set_objective
    from tests.nugget_core.conftest import make_causal_lm, make_doc_batch

    batch = make_doc_batch()
    model = Nugget2DModel(make_causal_lm(), Nugget2DConfig(ratio=0.5, scorer_layer=1, lora_rank=4))
    set_objective(model, "continuation")
    with autocast(CPU, "bf16"):
        out = objective_loss(model, "continuation", batch)
    out.loss.backward()
    assert torch.isfinite(out.loss)
    assert any(p.grad is not None and float(p.grad.abs().sum()) > 0 for p in model.scorer.parameters())
    with autocast(CPU, "bf16"):
        ar = ar_loss(model, batch["doc_ids"][:1, :8], 4, ratio=0.5)
    assert torch.isfinite(ar.loss)


def test_nugget_bart_loss_runs_under_cpu_bf16_autocast():
    from nugget_core import NuggetConfig, get_nugget_model
    from tests.nugget_core.conftest import make_model

    base = make_model("bart")
    model = get_nugget_model(base, NuggetConfig(ratio=0.5, scorer_layer=1)).train()
    ids = torch.randint(4, base.config.vocab_size, (2, 10))
    with autocast(CPU, "bf16"):
        loss = model(input_ids=ids, attention_mask=torch.ones_like(ids), labels=ids).loss
    loss.backward()
    assert torch.isfinite(loss)
    assert any(p.grad is not None for p in model.parameters() if p.requires_grad)


class FrozenBase(torch.nn.Module):
    """A frozen 'base' layer under a trained head: the layout of a LoRA job."""

    def __init__(self) -> None:
        super().__init__()
        self.base = torch.nn.Linear(8, 8)
        self.head = torch.nn.Linear(8, 1)
        self.base.requires_grad_(False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(torch.relu(self.base(x)))


def test_ddp_bf16_holds_the_frozen_weights_in_bf16_and_exports_them_in_fp32():
    """precision=bf16: frozen weights bf16 (no re-cast per step), trained weights and their
    optimiser state fp32; an export sees fp32 weights with the bf16 values trained on, and
    the training copy is bf16 again after it."""
    torch.manual_seed(0)
    model = FrozenBase()
    original = model.base.weight.detach().clone()
    engine = DDPEngine(model, nugget_job(precision="bf16", lr=1e-2), find_unused=False, device=CPU)
    assert model.base.weight.dtype is torch.bfloat16 and model.base.bias.dtype is torch.bfloat16
    assert model.head.weight.dtype is torch.float32
    batch = {"x": torch.randn(32, 8), "y": torch.randn(32, 1)}
    losses = [engine.train_step([batch], 1e-2, _loss) for _ in range(30)]
    assert losses[-1] < losses[0]
    assert all(s["exp_avg"].dtype is torch.float32 for s in engine.optimizer.state.values())
    with engine.exporting():
        exported = {k: v.clone() for k, v in model.state_dict().items()}
    assert all(v.dtype is torch.float32 for v in exported.values())
    torch.testing.assert_close(exported["base.weight"], original.to(torch.bfloat16).float(), rtol=0, atol=0)
    assert model.base.weight.dtype is torch.bfloat16


def test_frozen_bf16_trains_like_autocast_alone():
    """Holding the frozen weights in bf16 is what autocast computes anyway (it casts them to
    bf16 for every matmul): the same losses within bf16 rounding."""
    batch = {"x": torch.randn(32, 8), "y": torch.randn(32, 1)}
    runs = []
    for hold in (True, False):
        torch.manual_seed(0)
        model = FrozenBase()
        engine = DDPEngine(model, nugget_job(precision="bf16" if hold else "fp32", lr=1e-2), find_unused=False,
                           device=CPU)
        engine.precision = "bf16"  # the fp32 engine's weights under bf16 autocast: autocast alone
        runs.append([engine.train_step([batch], 1e-2, _loss) for _ in range(10)])
    torch.testing.assert_close(torch.tensor(runs[0]), torch.tensor(runs[1]), rtol=2e-2, atol=2e-2)


def test_fp32_leaves_every_weight_in_fp32():
    model = FrozenBase()
    engine = DDPEngine(model, nugget_job(precision="fp32"), find_unused=False, device=CPU)
    assert all(p.dtype is torch.float32 for p in model.parameters())
    assert engine.frozen.params and engine.frozen.dtype is torch.float32
