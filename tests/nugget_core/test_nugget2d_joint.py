"""The joint training pass (`nugget_core.nugget2d.joint`) equals the two-pass form: the
same loss, logits and gradients for every objective, residual mode and family."""

from __future__ import annotations

import pytest
import torch

from nugget_core.nugget2d import Nugget2DConfig, Nugget2DModel
from nugget_core.nugget2d.config import TrainingPass
from nugget_core.nugget2d.joint import joint_visibility
from nugget_core.nugget2d.objectives import objective_loss, set_objective
from tests.nugget_core.conftest import randomize_nugget2d

pytestmark = pytest.mark.usefixtures("one_thread")


def assert_same_gradient(got: torch.Tensor, want: torch.Tensor, name: str) -> None:
    """Equal up to fp32 summation order, relative to the tensor's scale (the attention
    sums run over other key sets). Measured, 3 objectives x LLaMA / Qwen2: worst 3.8e-5 of the
    tensor's max in fp32, 2.9e-12 in float64."""
    scale = float(want.abs().max())
    assert float((got - want).abs().max()) <= 1e-4 * scale + 1e-8, name


def loss_and_grads(model: Nugget2DModel, objective: str, batch: dict, training_pass: TrainingPass):
    model.config.training_pass = training_pass
    model.zero_grad(set_to_none=True)
    out = objective_loss(model, objective, batch)
    out.loss.backward()
    grads = {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}
    return out, grads


@pytest.mark.parametrize("family", ["llama", "qwen2"])
@pytest.mark.parametrize("objective", ["autoencoding", "continuation", "finetune"])
@pytest.mark.parametrize("residual", ["straight_through", "direct"])
def test_joint_pass_equals_compress_then_decode(causal_factory, doc_batch, family, objective, residual):
    model = randomize_nugget2d(Nugget2DModel(causal_factory(family), Nugget2DConfig(
        ratio=0.4, scorer_layer=1, lora_rank=4, soft_prompt_tokens=2, residual=residual)))
    model.train()
    set_objective(model, objective)
    two, two_grads = loss_and_grads(model, objective, doc_batch, TrainingPass.TWO_PASS)
    joint, joint_grads = loss_and_grads(model, objective, doc_batch, TrainingPass.JOINT)
    assert joint.context is None and two.context is not None
    assert joint.nugget_counts.tolist() == two.nugget_counts.tolist() == two.context.counts.tolist()
    torch.testing.assert_close(joint.loss, two.loss, rtol=1e-5, atol=1e-6)
    real = joint.labels.ne(-100)
    assert torch.equal(joint.labels, two.labels) and bool(real.any())
    torch.testing.assert_close(joint.logits[real], two.logits[real], rtol=1e-4, atol=1e-5)
    # every parameter the two-pass form trains gets the same gradient; the joint pass may
    # also give an exact 0 where the two-pass form gives none (phi's last-layer output
    # projection shapes no kept key or value; theta's gate is 0 on document tokens)
    assert set(two_grads) <= set(joint_grads)
    assert any("lora_B.compressor" in n for n in two_grads) and any("scorer" in n for n in two_grads)
    for name, grad in joint_grads.items():
        if name in two_grads:
            assert_same_gradient(grad, two_grads[name], name)
        else:
            assert not grad.any(), name


def test_joint_pass_with_activation_checkpointing_keeps_the_gradients(causal_factory, doc_batch):
    """Per-layer recomputation of a pass routed per token: the checkpoints reinstate the
    gates, so the gradients equal the plain joint pass's."""
    def build() -> Nugget2DModel:  # twice, not deepcopy: the router's hooks belong to one model
        model = randomize_nugget2d(Nugget2DModel(causal_factory(), Nugget2DConfig(ratio=0.4, scorer_layer=1, lora_rank=4)))
        model.train()
        set_objective(model, "finetune")
        return model

    def layer_calls(model: Nugget2DModel) -> list[int]:
        calls: list[int] = []
        for layer in model.adaptor.layers(model.lm):  # a recomputation runs the MLP's forward again
            forward = layer.mlp.forward  # (module hooks do not fire inside torch's recomputation)
            layer.mlp.forward = lambda *a, forward=forward, **k: (calls.append(1), forward(*a, **k))[1]
        return calls

    plain_model = build()
    plain_calls = layer_calls(plain_model)
    plain, plain_grads = loss_and_grads(plain_model, "finetune", doc_batch, TrainingPass.JOINT)
    checkpointed = build()
    checkpointed.enable_activation_checkpointing()
    calls = layer_calls(checkpointed)
    out, grads = loss_and_grads(checkpointed, "finetune", doc_batch, TrainingPass.JOINT)
    # every layer of the joint pass was recomputed in backward
    assert len(calls) == len(plain_calls) + len(checkpointed.adaptor.layers(checkpointed.lm))
    torch.testing.assert_close(out.loss, plain.loss)
    assert set(grads) == set(plain_grads)
    for name, grad in grads.items():
        assert_same_gradient(grad, plain_grads[name], name)


def test_joint_visibility_rows():
    doc_mask = torch.tensor([[1, 1, 1, 0]])
    selected = torch.tensor([[False, True, True, False]])
    token_mask = torch.tensor([[1, 1, 0]])
    v = joint_visibility(doc_mask, selected, token_mask)[0].int()
    assert v.tolist() == [
        # document rows: causal over the real document, never a decoder key
        [1, 0, 0, 0, 0, 0, 0],
        [1, 1, 0, 0, 0, 0, 0],
        [1, 1, 1, 0, 0, 0, 0],
        [1, 1, 1, 0, 0, 0, 0],  # padding row: the real document
        # decoder rows: the nuggets, then causal over the real decoder tokens
        [0, 1, 1, 0, 1, 0, 0],
        [0, 1, 1, 0, 1, 1, 0],
        [0, 1, 1, 0, 1, 1, 0],  # padding row: sees the nuggets
    ]
