"""Config validation, save/load round trip, unsupported models, and the reference
package's usage pattern (`nuggify`)."""

from __future__ import annotations

import json

import pytest
import torch
from transformers import GPT2Config, GPT2LMHeadModel

from nugget_core import NuggetConfig, NuggetModel, get_nugget_model, nuggify


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"ratio": 0.0}, r"NuggetConfig.ratio=0.0 must be in \(0, 1\]"),
        ({"ratio": 1.5}, r"NuggetConfig.ratio=1.5 must be in \(0, 1\]"),
        ({"ratio": "0.5"}, r"NuggetConfig.ratio='0.5' must be a number"),
        ({"scorer_layer": -1}, r"NuggetConfig.scorer_layer=-1 must be >= 0"),
        (
            {"residual": "sideways"},
            r"NuggetConfig.residual='sideways' is not one of 'straight_through', 'direct', 'none'",
        ),
        ({"selector": "random"}, r"NuggetConfig.selector='random' is not one of"),
    ],
)
def test_bad_config_values_name_field_and_value(kwargs, message):
    with pytest.raises(ValueError, match=message):
        NuggetConfig(**kwargs)


def test_config_errors_at_attach_time(model_factory):
    with pytest.raises(
        ValueError, match=r"NuggetConfig.scorer_layer=3 exceeds the number of encoder layers \(2\)"
    ):
        get_nugget_model(model_factory("bart"), NuggetConfig(scorer_layer=3))
    with pytest.raises(ValueError, match=r"unknown field\(s\) \['rato'\]"):
        NuggetConfig.from_dict({"rato": 0.5})
    gpt2 = GPT2LMHeadModel(GPT2Config(n_layer=1, n_embd=16, n_head=2, vocab_size=20))
    with pytest.raises(
        ValueError, match=r"model_type='gpt2'.*supported encoder-decoder types: bart, mbart, t5"
    ):
        get_nugget_model(gpt2, NuggetConfig(scorer_layer=1))


@pytest.mark.parametrize("arch", ["bart", "t5"])
def test_save_load_round_trip_identical_logits(tmp_path, model_factory, batch_factory, arch):
    config = NuggetConfig(ratio=0.4, scorer_layer=1, residual="direct", feedback=True)
    nugget_model = get_nugget_model(model_factory(arch), config)
    with torch.no_grad():  # move every nugget part away from its initial value
        for p in nugget_model.scorer.parameters():
            p.add_(0.1 * torch.randn_like(p))
    batch = batch_factory(nugget_model.base_model)
    expected = nugget_model(**batch).logits
    nugget_model.save_pretrained(tmp_path)
    assert json.loads((tmp_path / "nugget_config.json").read_text()) == config.to_dict()

    loaded = NuggetModel.from_pretrained(tmp_path, attn_implementation="sdpa").eval()
    assert loaded.config == config
    assert torch.equal(loaded(**batch).logits, expected)
    expected_nuggets = nugget_model.encode(batch["input_ids"], batch["attention_mask"])
    got_nuggets = loaded.encode(batch["input_ids"], batch["attention_mask"])
    assert torch.equal(got_nuggets.indices, expected_nuggets.indices)


def test_reference_usage_pattern_matches_nugget_model(model_factory, batch_factory):
    model = model_factory("bart")
    batch = batch_factory(model)
    inputs = {"input_ids": batch["input_ids"], "attention_mask": batch["attention_mask"]}
    labels = batch["decoder_input_ids"]
    scorer, encoder, decoder = nuggify(
        model, NuggetConfig(ratio=0.5, scorer_layer=1, residual="direct")
    )

    encoder_out = encoder(**inputs)
    nuggets = scorer(**inputs, hidden_states=encoder_out.last_hidden_state, nugget_ratio=0.5)
    with scorer.score_context(nuggets):
        out = decoder(
            encoder_outputs=[nuggets.encoding],
            attention_mask=nuggets.mask,
            labels=labels,
            decoder_attention_mask=torch.ones_like(labels),
        )
    out.loss.backward()
    assert scorer.ffn[0].weight.grad.abs().sum() > 0

    # Same numbers as the primary API on the same (hooked) model.
    primary = encoder._nugget_model[0]
    torch.testing.assert_close(primary(**inputs, labels=labels).loss, out.loss)

    with pytest.raises(ValueError, match="hidden_states"):
        scorer(**inputs, hidden_states=encoder_out.last_hidden_state.clone(), nugget_ratio=0.5)
    with pytest.raises(ValueError, match="differs from the ratio the encoder used"):
        scorer(**inputs, hidden_states=encoder_out.last_hidden_state, nugget_ratio=0.25)


def test_unload_restores_plain_model(model_factory, batch_factory):
    model = model_factory("t5")
    batch = batch_factory(model)
    expected = model(**batch).logits
    nugget_model = get_nugget_model(model, NuggetConfig(scorer_layer=1))
    with pytest.raises(RuntimeError, match="outside a nugget pass"):
        model(**batch)
    with pytest.raises(ValueError, match="already has Nugget attached"):
        get_nugget_model(model, NuggetConfig(scorer_layer=1))
    assert torch.equal(nugget_model.unload()(**batch).logits, expected)
