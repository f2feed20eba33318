"""RE gating layer: shapes, causality, and the single-vector baselines end to end."""

from __future__ import annotations

import pytest
import torch

from nugget_core import TinyBartSpec, build_tiny_bart, train_bpe_tokenizer
from nugget_core.baselines import BottleneckModel, GatingLayer, get_bottleneck_model

TEXTS = ["the cat sat on the mat.", "a dog ran, and the cat sat.", "red mat, blue rug."] * 20


def test_gating_layer_shapes():
    layer = GatingLayer(d_model=16, d_repr=8)
    q = torch.randn(3, 7, 16)
    e = torch.randn(3, 1, 8)
    out, weights = layer(q, key_value_states=e)
    assert out.shape == (3, 7, 16) and weights is None
    with pytest.raises(ValueError):
        layer(q, key_value_states=torch.randn(3, 2, 8))  # one vector only


def test_gating_layer_is_causal():
    torch.manual_seed(0)
    layer = GatingLayer(d_model=16, d_repr=16)
    q = torch.randn(2, 9, 16)
    e = torch.randn(2, 16)
    base = layer.gate(q, e)[0]
    for t in range(9):
        changed = q.clone()
        changed[:, t] += torch.randn(2, 16)
        out = layer.gate(changed, e)[0]
        # positions before t never see the later query ...
        torch.testing.assert_close(out[:, :t], base[:, :t])
        # ... and position t (and, through the running mean, later ones) does
        assert not torch.allclose(out[:, t], base[:, t])
    # the running mean: position i is the gate of mean(W1 q_1..i), checked at i = 4
    q_bar = layer.w1(q[:, :5]).mean(dim=1)
    a, b = layer.w2(torch.cat([q_bar, e], dim=-1)).chunk(2, dim=-1)
    torch.testing.assert_close(base[:, 4], layer.w3(torch.relu(a) * b * e))


def test_gating_layer_continues_a_running_mean_from_its_state():
    """Step by step with the returned (sum, count) equals one pass over the whole prefix."""
    torch.manual_seed(0)
    layer = GatingLayer(d_model=16, d_repr=16)
    q, e = torch.randn(2, 6, 16), torch.randn(2, 16)
    whole = layer.gate(q, e)[0]
    out, total, count = layer.gate(q[:, :2], e)
    steps = [out]
    for t in range(2, 6):
        out, total, count = layer.gate(q[:, t : t + 1], e, total, count)
        steps.append(out)
    torch.testing.assert_close(torch.cat(steps, dim=1), whole)
    assert count.tolist() == [[6.0], [6.0]]


@pytest.fixture(scope="module")
def tok():
    return train_bpe_tokenizer(TEXTS, vocab_size=300)


@pytest.mark.parametrize("decoder", ["cross", "gating"])
def test_bottleneck_trains_generates_and_reloads(tok, decoder, tmp_path):
    torch.manual_seed(0)
    base = build_tiny_bart(tok, TinyBartSpec(d_model=32, layers=2, ffn_dim=64, dropout=0.0))
    model = get_bottleneck_model(base, decoder=decoder)
    if decoder == "gating":
        assert sum(isinstance(m, GatingLayer) for m in model.modules()) == 2
    enc = tok(TEXTS[:3], return_tensors="pt", padding=True)
    labels = enc.input_ids.masked_fill(enc.attention_mask == 0, -100)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    first = None
    for _ in range(60):
        loss = model(enc.input_ids, enc.attention_mask, labels=labels).loss
        first = first if first is not None else loss.item()
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert loss.item() < 0.5 * first
    model.eval()
    vectors = model.embed(enc.input_ids, enc.attention_mask)
    assert vectors.shape == (3, 32)
    out = model.generate(enc.input_ids, enc.attention_mask, num_beams=5, max_new_tokens=20)
    assert out.shape[0] == 3
    model.save_pretrained(tmp_path)
    again = BottleneckModel.from_pretrained(tmp_path)
    with torch.no_grad():
        torch.testing.assert_close(
            again(enc.input_ids, enc.attention_mask, labels=labels).logits,
            model(enc.input_ids, enc.attention_mask, labels=labels).logits,
        )


@pytest.mark.parametrize("num_beams", [1, 4])
def test_gating_decoder_cached_generation_equals_uncached(tok, num_beams):
    """The running sum kept in the cross-attention cache (reordered by beam search) gives
    the tokens of decoding without a cache, where every step re-runs the whole prefix."""
    torch.manual_seed(0)
    base = build_tiny_bart(tok, TinyBartSpec(d_model=32, layers=2, ffn_dim=64, dropout=0.0))
    model = get_bottleneck_model(base, decoder="gating").eval()
    enc = tok(TEXTS[:3], return_tensors="pt", padding=True)
    kwargs = dict(num_beams=num_beams, max_new_tokens=24, min_new_tokens=24, do_sample=False,
                  output_scores=True, return_dict_in_generate=True)
    cached = model.generate(enc.input_ids, enc.attention_mask, use_cache=True, **kwargs)
    uncached = model.generate(enc.input_ids, enc.attention_mask, use_cache=False, **kwargs)
    assert cached.sequences.shape[1] > 20
    assert torch.equal(cached.sequences, uncached.sequences)
    # the scores of every step, not only the argmax (an untrained model's tokens alone
    # hardly depend on the gating layers)
    torch.testing.assert_close(torch.stack(cached.scores), torch.stack(uncached.scores))
