"""Tied weights in one flat buffer (DeepSpeed ZeRO-2 + bf16 keeps every parameter as a view
of one buffer) save and reload (`nugget_core.weights.save_weights`): safetensors'
``save_model`` found "no suitable name to keep" for mBART-50's tied embeddings there, and
the paper rehearsal's train_baselines failed on it."""

from __future__ import annotations

import pytest
import torch
from conftest import make_model
from safetensors.torch import save_model

from nugget_core.baselines import BottleneckModel, get_bottleneck_model
from nugget_core.restorable import RestorableConfig, RestorableModel


def _flatten_parameters(module: torch.nn.Module) -> None:
    """Every parameter becomes a view of one flat buffer, as DeepSpeed's bf16 optimizer does."""
    params = list(module.parameters())  # a tied parameter once
    flat = torch.cat([p.detach().reshape(-1) for p in params])
    offset = 0
    for p in params:
        p.data = flat[offset:offset + p.numel()].view_as(p)
        offset += p.numel()


def _tied_mbart():
    model = make_model("mbart")
    assert model.config.tie_word_embeddings
    assert model.lm_head.weight is model.model.shared.weight  # the ties this is about
    return model


def test_safetensors_save_model_refuses_tied_views_of_a_flat_buffer(tmp_path):
    model = _tied_mbart()
    _flatten_parameters(model)
    with pytest.raises(RuntimeError, match="no suitable name to keep"):
        save_model(model, str(tmp_path / "model.safetensors"))


@pytest.mark.parametrize("decoder", ["cross", "gating"])
def test_a_bottleneck_on_a_tied_flat_model_saves_and_reloads(tmp_path, decoder):
    model = get_bottleneck_model(_tied_mbart(), decoder=decoder).eval()
    _flatten_parameters(model)
    model.save_pretrained(tmp_path)
    again = BottleneckModel.from_pretrained(tmp_path)
    assert again.base_model.lm_head.weight is again.base_model.model.shared.weight  # still tied
    ids = torch.tensor([[0, 5, 6, 7, 2], [0, 8, 9, 2, 1]])
    mask = (ids != 1).long()
    with torch.no_grad():
        torch.testing.assert_close(again(ids, mask, labels=ids).logits, model(ids, mask, labels=ids).logits)


def test_a_restorable_model_on_a_tied_flat_t5_saves_and_reloads(tmp_path):
    model = RestorableModel(make_model("t5"), RestorableConfig()).eval()
    _flatten_parameters(model)
    model.save_pretrained(tmp_path)
    again = RestorableModel.from_pretrained(tmp_path)
    for name, tensor in model.state_dict().items():
        torch.testing.assert_close(again.state_dict()[name], tensor, msg=name)
