"""Nugget feedback: type embeddings at layer l, frozen embeddings and bottom layers."""

from __future__ import annotations

import pytest
import torch

from nugget_core import NuggetConfig, get_nugget_model


def _train_step(nugget_model, batch):
    nugget_model.zero_grad(set_to_none=True)
    nugget_model(**batch, labels=batch["decoder_input_ids"]).loss.backward()


@pytest.mark.parametrize("arch", ["bart", "t5"])
def test_frozen_layers_get_no_gradient_type_embeddings_do(model_factory, batch_factory, arch):
    model = model_factory(arch)
    nugget_model = get_nugget_model(model, NuggetConfig(ratio=0.5, scorer_layer=1, feedback=True))
    batch = batch_factory(model)
    _train_step(nugget_model, batch)
    adaptor = nugget_model.adaptor
    layers = adaptor.encoder_layers(model)
    frozen = [*adaptor.embedding_modules(model), layers[0]]
    for module in frozen:
        for p in module.parameters():
            assert not p.requires_grad and p.grad is None
    assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in layers[1].parameters())
    type_grad = nugget_model.scorer.type_embeddings.weight.grad
    assert type_grad is not None and (type_grad.abs().sum(dim=1) > 0).all()  # both types
    # The scorer is trained through the residual even though its input layer is frozen.
    assert nugget_model.scorer.ffn[0].weight.grad.abs().sum() > 0

    counts = nugget_model.parameter_counts()
    frozen_numel = sum(p.numel() for m in frozen for p in m.parameters())
    assert counts["total"].total - counts["total"].trainable == frozen_numel
    assert counts["scorer"].trainable == counts["scorer"].total > 0


def test_feedback_changes_the_encoding_by_type(model_factory, batch_factory):
    model = model_factory("bart")
    nugget_model = get_nugget_model(model, NuggetConfig(ratio=0.5, scorer_layer=1))
    batch = batch_factory(model)
    before = nugget_model.encode(batch["input_ids"], batch["attention_mask"]).encoding
    with torch.no_grad():
        nugget_model.scorer.type_embeddings.weight.normal_()
    after = nugget_model.encode(batch["input_ids"], batch["attention_mask"]).encoding
    assert (before - after).abs().max() > 1e-3  # zero-initialised, so a no-op before


@pytest.mark.parametrize("layer", [0, 2])
def test_scorer_layer_bounds_embedding_and_top(model_factory, batch_factory, layer):
    model = model_factory("bart")
    nugget_model = get_nugget_model(model, NuggetConfig(ratio=0.5, scorer_layer=layer))
    batch = batch_factory(model)
    _train_step(nugget_model, batch)
    layers = nugget_model.adaptor.encoder_layers(model)
    assert [all(not p.requires_grad for p in m.parameters()) for m in layers] == [
        i < layer for i in range(len(layers))
    ]
    assert nugget_model.scorer.type_embeddings.weight.grad.abs().sum() > 0


def test_without_feedback_nothing_is_frozen(model_factory):
    nugget_model = get_nugget_model(
        model_factory("bart"), NuggetConfig(scorer_layer=2, feedback=False)
    )
    counts = nugget_model.parameter_counts()["total"]
    assert counts.trainable == counts.total
