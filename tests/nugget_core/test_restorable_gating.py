"""RE gating layer (eqs. 4-5) and the T5 gating sublayer (fig. 2(c)) against hand arithmetic."""

from __future__ import annotations

import math

import torch
from transformers import T5Config

from nugget_core.restorable import GatingLayer
from nugget_core.restorable.t5 import T5GatingSublayer

# d_model = d_repr = 2; three decoder queries and one e_repr.
Q = [[1.0, 2.0], [3.0, -1.0], [0.0, 1.0]]
E = [0.5, -1.0]
# nn.Linear weights are [out, in]: y_k = sum_j W[k][j] x_j + b_k.
W1, B1 = [[1.0, 0.0], [1.0, 1.0]], [0.0, 0.0]
# W2 maps concat(q-, e) (4) to the two halves a (2) and b (2) of the gated ReLU.
W2 = [[1.0, 0.0, 1.0, 0.0], [0.0, 1.0, 0.0, 1.0], [1.0, 1.0, 0.0, 0.0], [0.0, 1.0, 2.0, 0.0]]
B2 = [-2.0, 0.0, 0.0, 0.0]
W3, B3 = [[1.0, 1.0], [0.0, 2.0]], [0.25, 0.0]


def linear(weight: list[list[float]], bias: list[float], x: list[float]) -> list[float]:
    return [sum(w * v for w, v in zip(row, x, strict=True)) + b for row, b in zip(weight, bias, strict=True)]


def hand_gate() -> list[list[float]]:
    """Eqs. 4-5 step by step in plain Python."""
    projected = [linear(W1, B1, q) for q in Q]  # q~_i = q_i W1
    out = []
    for i in range(len(Q)):
        mean = [sum(p[k] for p in projected[: i + 1]) / (i + 1) for k in range(2)]  # eq. 4
        h = linear(W2, B2, mean + E)  # concat(q-_i, e) W2
        act = [max(h[k], 0.0) * h[k + 2] for k in range(2)]  # gated ReLU: relu(a) * b
        gated = [act[k] * E[k] for k in range(2)]  # (.) e_repr
        out.append(linear(W3, B3, gated))  # W3
    return out


def set_weights(layer: GatingLayer) -> None:
    with torch.no_grad():
        for linear_module, weight, bias in ((layer.w1, W1, B1), (layer.w2, W2, B2), (layer.w3, W3, B3)):
            linear_module.weight.copy_(torch.tensor(weight))
            linear_module.bias.copy_(torch.tensor(bias))


def test_gating_layer_equals_hand_computed_eqs_4_5():
    expected = hand_gate()
    # The same numbers worked out on paper: running means (1, 3), (2, 2.5), (4/3, 2);
    # a = (-0.5, 2), (0.5, 1.5), (-1/6, 1); b = (4, 4), (4.5, 3.5), (10/3, 3).
    assert expected == [[-7.75, -16.0], [-3.875, -10.5], [-2.75, -6.0]]
    layer = GatingLayer(d_model=2, d_repr=2)
    set_weights(layer)
    out, weights = layer(torch.tensor([Q]), key_value_states=torch.tensor([[E]]))
    assert weights is None
    torch.testing.assert_close(out, torch.tensor([expected]))


def test_t5_gating_sublayer_adds_and_layer_normalises():
    eps = 1e-6
    config = T5Config(d_model=2, d_kv=2, num_heads=1, d_ff=4, dropout_rate=0.0, layer_norm_epsilon=eps)
    sublayer = T5GatingSublayer(config, d_repr=2, layer_idx=0)
    set_weights(sublayer.gating)
    out, position_bias, weights = sublayer(torch.tensor([Q]), key_value_states=torch.tensor([[E]]))
    expected = []
    for q, gated in zip(Q, hand_gate(), strict=True):
        summed = [q[k] + gated[k] for k in range(2)]  # residual
        mean = sum(summed) / 2
        var = sum((v - mean) ** 2 for v in summed) / 2
        expected.append([(v - mean) / math.sqrt(var + eps) for v in summed])  # LayerNorm (weight 1, bias 0)
    assert position_bias is None and weights is None
    torch.testing.assert_close(out, torch.tensor([expected]))
