"""Nugget feedback: type embeddings at layer l, frozen embeddings and bottom layers."""

from __future__ import annotations

import pytest
import torch

from nugget_core import NuggetConfig, get_nugget_model
from nugget_core.params import decoder_side_parameters


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
    tied = {id(p) for p in decoder_side_parameters(model)}  # the shared token embedding
    frozen = [p for m in [*adaptor.embedding_modules(model), layers[0]] for p in m.parameters() if id(p) not in tied]
    for p in frozen:
        assert not p.requires_grad and p.grad is None
    shared = adaptor.embedding_modules(model)[0].weight  # embed_tokens, tied to the decoder / LM head
    assert id(shared) in tied and shared.requires_grad and shared.grad is not None
    assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in layers[1].parameters())
    type_grad = nugget_model.scorer.type_embeddings.weight.grad
    assert type_grad is not None and (type_grad.abs().sum(dim=1) > 0).all()  # both types
    # The scorer is trained through the residual even though its input layer is frozen.
    assert nugget_model.scorer.ffn[0].weight.grad.abs().sum() > 0

    counts = nugget_model.parameter_counts()
    frozen_numel = sum(p.numel() for p in frozen)
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


def test_without_feedback_the_bottom_layers_stay_frozen(model_factory):
    """Nugget §7.1's no-feedback ablation changes one thing: the feedback."""
    model = model_factory("bart")
    nugget_model = get_nugget_model(model, NuggetConfig(scorer_layer=2, feedback=False))
    for layer in nugget_model.adaptor.encoder_layers(model)[:2]:
        assert not any(p.requires_grad for p in layer.parameters())
    unfrozen = get_nugget_model(model_factory("bart"), NuggetConfig(scorer_layer=2, feedback=False,
                                                                    freeze_bottom=False))
    counts = unfrozen.parameter_counts()["total"]
    assert counts.trainable == counts.total


def test_tied_embeddings_stay_trainable_unless_asked(model_factory):
    """mBART-50 ties the encoder's token embedding to the decoder's and the LM head:
    freezing it (the old behaviour) froze those too; §3.3 freezes encoder layers only."""
    model = model_factory("mbart")
    get_nugget_model(model, NuggetConfig(scorer_layer=1))
    assert model.get_input_embeddings().weight is model.get_output_embeddings().weight
    assert model.get_output_embeddings().weight.requires_grad
    assert not model.get_encoder().embed_positions.weight.requires_grad  # encoder-only: frozen
    asked = model_factory("mbart")
    get_nugget_model(asked, NuggetConfig(scorer_layer=1, freeze_shared_embeddings=True))
    assert not asked.get_output_embeddings().weight.requires_grad
