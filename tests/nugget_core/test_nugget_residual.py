"""The residual into cross-attention, checked against vanilla HF outputs (litgpt-style):
BART and T5, eager and sdpa."""

from __future__ import annotations

import pytest
import torch
from torch import nn
from transformers.modeling_outputs import BaseModelOutput
from transformers.models.bart import modeling_bart
from transformers.models.mbart import modeling_mbart
from transformers.models.t5 import modeling_t5

from nugget_core import NuggetConfig, get_nugget_model

ARCHS = ("bart", "mbart", "t5")
IMPLS = ("eager", "sdpa")


def _identity_all_tokens(model, residual: str = "straight_through"):
    config = NuggetConfig(ratio=1.0, scorer_layer=1, residual=residual, feedback=False)
    nugget_model = get_nugget_model(model, config)
    with torch.no_grad():
        nugget_model.scorer.value_proj.weight.copy_(torch.eye(32))
    return nugget_model


def _decode(nugget_model, nuggets, batch, active: bool = True):
    """Decoder logits from ``nuggets``; with ``active=False`` no residual is applied."""
    kwargs = dict(
        encoder_outputs=BaseModelOutput(last_hidden_state=nuggets.encoding),
        attention_mask=nuggets.mask,
        decoder_input_ids=batch["decoder_input_ids"],
    )
    if not active:
        return nugget_model.base_model(**kwargs).logits
    with nugget_model.score_context(nuggets):
        return nugget_model.base_model(**kwargs).logits


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("arch", ARCHS)
def test_all_tokens_identity_straight_through_equals_vanilla(
    model_factory, batch_factory, arch, impl
):
    model = model_factory(arch, impl)
    batch = batch_factory(model)
    source = {"input_ids": batch["input_ids"], "attention_mask": batch["attention_mask"]}
    labels = batch["decoder_input_ids"]
    expected = model(**batch).logits
    expected_loss = model(**source, labels=labels).loss
    nugget_model = _identity_all_tokens(model)
    torch.testing.assert_close(nugget_model(**batch).logits, expected)
    # labels=... gives the HF loss through the nugget model too.
    torch.testing.assert_close(nugget_model(**source, labels=labels).loss, expected_loss)


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("arch", ARCHS)
def test_straight_through_forward_unchanged_but_scorer_gets_gradient(
    model_factory, batch_factory, arch, impl
):
    nugget_model = get_nugget_model(
        model_factory(arch, impl), NuggetConfig(ratio=0.5, scorer_layer=1, feedback=False)
    )
    batch = batch_factory(nugget_model.base_model)
    nuggets = nugget_model.encode(batch["input_ids"], batch["attention_mask"])
    plain = _decode(nugget_model, nuggets, batch, active=False)
    straight = _decode(nugget_model, nuggets, batch)
    if impl == "eager":
        assert torch.equal(straight, plain)  # bit-identical: the bias is exactly +0.0
    else:
        # With gradients, sdpa gets a float mask (bias +0.0) and picks another CPU kernel
        # than for a bool/None mask: equal up to kernel rounding.
        torch.testing.assert_close(straight, plain, rtol=0, atol=1e-5)
    with torch.no_grad():  # no gradient wanted: the HF path is left bit-identical
        nuggets_ng = nugget_model.encode(batch["input_ids"], batch["attention_mask"])
        assert torch.equal(
            _decode(nugget_model, nuggets_ng, batch),
            _decode(nugget_model, nuggets_ng, batch, active=False),
        )
    straight.logsumexp(-1).sum().backward()
    grads = [p.grad for p in nugget_model.scorer.ffn.parameters()]
    assert all(g is not None and g.abs().sum() > 0 for g in grads)


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("arch", ARCHS)
def test_direct_residual_changes_forward(model_factory, batch_factory, arch, impl):
    nugget_model = get_nugget_model(
        model_factory(arch, impl),
        NuggetConfig(ratio=0.5, scorer_layer=1, residual="direct", feedback=False),
    )
    batch = batch_factory(nugget_model.base_model)
    nuggets = nugget_model.encode(batch["input_ids"], batch["attention_mask"])
    plain = _decode(nugget_model, nuggets, batch, active=False)
    direct = _decode(nugget_model, nuggets, batch)
    assert (direct - plain).abs().max() > 1e-4
    direct.sum().backward()
    assert nugget_model.scorer.ffn[0].weight.grad.abs().sum() > 0


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("arch", ARCHS)
def test_padding_mask_intact(model_factory, batch_factory, arch, impl):
    """A padded sequence in a batch decodes exactly like the same sequence alone."""
    nugget_model = get_nugget_model(
        model_factory(arch, impl), NuggetConfig(ratio=0.5, scorer_layer=1, residual="direct")
    )
    batch = batch_factory(nugget_model.base_model)  # row 1: 6 real tokens of 9
    together = nugget_model(**batch).logits[1]
    alone = nugget_model(
        input_ids=batch["input_ids"][1:, :6],
        attention_mask=batch["attention_mask"][1:, :6],
        decoder_input_ids=batch["decoder_input_ids"][1:],
    ).logits[0]
    torch.testing.assert_close(together, alone, rtol=1e-5, atol=1e-5)


def _record_attention_masks(
    monkeypatch, arch: str, impl: str
) -> list[tuple[int, int, torch.Tensor | None]]:
    """Record (q_len, k_len, mask) of every call into the attention kernel."""
    calls: list[tuple[int, int, torch.Tensor | None]] = []
    if impl == "sdpa":
        kernel = torch.nn.functional.scaled_dot_product_attention

        def recording(query, key, value, attn_mask=None, *args, **kwargs):
            calls.append(
                (
                    query.shape[2],
                    key.shape[2],
                    None if attn_mask is None else attn_mask.detach().clone(),
                )
            )
            return kernel(query, key, value, attn_mask, *args, **kwargs)

        monkeypatch.setattr(torch.nn.functional, "scaled_dot_product_attention", recording)
    else:
        module = {"bart": modeling_bart, "mbart": modeling_mbart, "t5": modeling_t5}[arch]
        eager = module.eager_attention_forward

        def recording(mod: nn.Module, query, key, value, attention_mask, *args, **kwargs):
            mask = None if attention_mask is None else attention_mask.detach().clone()
            calls.append((query.shape[2], key.shape[2], mask))
            return eager(mod, query, key, value, attention_mask, *args, **kwargs)

        monkeypatch.setattr(module, "eager_attention_forward", recording)
    return calls


def _as_float(mask: torch.Tensor | None, shape) -> torch.Tensor:
    if mask is None:
        return torch.zeros(shape)
    if mask.dtype == torch.bool:
        return torch.zeros(mask.shape).masked_fill(~mask, torch.finfo(torch.float32).min)
    return mask


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("arch", ARCHS)
def test_residual_reaches_every_cross_attention_and_no_self_attention(
    monkeypatch, model_factory, batch_factory, arch, impl
):
    nugget_model = _identity_all_tokens(model_factory(arch, impl), residual="direct")
    batch = batch_factory(nugget_model.base_model)  # source 9 tokens (k = 9), target 5
    nuggets = nugget_model.encode(batch["input_ids"], batch["attention_mask"])
    with torch.no_grad():
        nuggets.scores.copy_(torch.linspace(1.0, 2.0, 18).view(2, 9) * nuggets.mask)
    calls = {}
    for active in (False, True):
        recorded = _record_attention_masks(monkeypatch, arch, impl)
        _decode(nugget_model, nuggets, batch, active=active)
        calls[active] = list(recorded)
        monkeypatch.undo()
    plain, biased = calls[False], calls[True]
    assert [c[:2] for c in plain] == [c[:2] for c in biased]
    n_cross = 0
    for (q, k, mask0), (_, _, mask1) in zip(plain, biased, strict=True):
        if (q, k) == (5, 9):  # decoder cross-attention
            n_cross += 1
            # eq. 5: s / sqrt(d_head) on HF's scaled logits (T5 scales nothing)
            expected = _as_float(mask0, (2, 1, 1, 9)) + nuggets.scores[:, None, None, :] * nugget_model.residual.scale
            torch.testing.assert_close(_as_float(mask1, (2, 1, 1, 9)).expand_as(expected), expected)
        else:  # encoder self-attention (9, 9) and decoder self-attention (5, 5)
            assert (mask0 is None and mask1 is None) or torch.equal(mask0, mask1)
    assert n_cross == nugget_model.residual.n_modules == 2
