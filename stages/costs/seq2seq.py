"""Bytes and FLOPs of a BART-style encoder-decoder (Nugget's base, and the RE study's):
one full fine-tuning step (`seq2seq_step_work`), an encoder forward (`encoder_forward_work`)
and one decode step (`seq2seq_decode_step_bytes`). Counting rules: `stages.costs.work`.

Per-layer sizes: encoder ``4 d^2 + 2 d ffn``; decoder self-attention and the
cross-attention query / output ``6 d^2 + 2 d ffn`` on target tokens, the cross key / value
projections ``2 d^2`` on the states they read. Bidirectional encoder attention:
``source^2`` pairs per row; decoder: causal, plus ``target x read`` cross. T5 is counted
with the same sizes (its FFN has two matrices, its projections ``d x d`` at T5-small).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from stages.costs.work import FORWARD, TRAINABLE, Attention, Matmul, causal_pairs


@dataclass(frozen=True)
class Seq2SeqShape:
    """The sizes of a BART-style encoder-decoder (tied LM head)."""

    d_model: int
    encoder_layers: int
    decoder_layers: int
    heads: int
    ffn: int
    vocab: int

    @classmethod
    def from_config(cls, config: Mapping[str, object]) -> Seq2SeqShape:
        """From a BART / mBART ``config.json`` (``d_model``, ``encoder_layers``, ...) or a
        T5 one (``d_model``, ``num_layers``, ``num_decoder_layers``, ``num_heads``, ``d_ff``)."""
        def num(*keys: str) -> int:
            for k in keys:
                if config.get(k) is not None:
                    return int(str(config[k]))
            raise KeyError(f"config has none of {keys}")

        encoder = num("encoder_layers", "num_layers")
        return cls(num("d_model"), encoder, num("decoder_layers", "num_decoder_layers", "num_layers"),
                   num("encoder_attention_heads", "num_heads"), num("encoder_ffn_dim", "d_ff"),
                   num("vocab_size"))

    def encoder_layer_params(self) -> int:
        return 4 * self.d_model * self.d_model + 2 * self.d_model * self.ffn

    def decoder_layer_params(self) -> int:
        """One decoder layer's matmuls that run on every target token: self-attention, the
        cross-attention query and output, the FFN (the cross keys / values run on the
        states read, once)."""
        return 6 * self.d_model * self.d_model + 2 * self.d_model * self.ffn


def seq2seq_step_work(shape: Seq2SeqShape, *, batch: int, source: int, target: int,
                      nuggets: int | None = None, frozen_layers: int = 0,
                      scorer_hidden: int | None = None) -> list[Matmul | Attention]:
    """Work of one full fine-tuning step of a BART-style model (every weight trained).

    ``nuggets=None``: vanilla: the decoder's cross-attention reads all ``source`` states.
    ``nuggets=k``: Nugget: the encoder's bottom ``frozen_layers`` layers (and embeddings)
    frozen and nothing below them needs gradients (forward only), the scorer FFN
    (``d -> scorer_hidden -> 1``, trained) on every source token, and cross-attention
    keys / values projected from, and attending to, the ``k`` nuggets only.
    """
    d = shape.d_model
    read = source if nuggets is None else nuggets
    src, tgt = batch * source, batch * target
    encoder_layer = shape.encoder_layer_params()
    frozen = 0 if nuggets is None else frozen_layers
    work: list[Matmul | Attention] = [
        Matmul("encoder layers (frozen)", frozen * encoder_layer, src, FORWARD),
        Matmul("encoder layers", (shape.encoder_layers - frozen) * encoder_layer, src, TRAINABLE),
        Matmul("decoder layers", shape.decoder_layers * shape.decoder_layer_params(), tgt, TRAINABLE),
        Matmul("cross key / value", shape.decoder_layers * 2 * d * d, batch * read, TRAINABLE),
        Matmul("lm_head", shape.vocab * d, tgt, TRAINABLE),
        Attention("encoder attention (frozen)", d, batch * source * source, frozen, backward=False),
        Attention("encoder attention", d, batch * source * source,
                  shape.encoder_layers - frozen, backward=True),
        Attention("decoder self-attention", d, batch * causal_pairs(target),
                  shape.decoder_layers, backward=True),
        Attention("cross-attention", d, batch * target * read, shape.decoder_layers, backward=True),
    ]
    if nuggets is not None:
        hidden = scorer_hidden or d
        work.append(Matmul("scorer", d * hidden + hidden, src, TRAINABLE))
    return work


def encoder_forward_work(shape: Seq2SeqShape, *, sequences: int, length: int) -> list[Matmul | Attention]:
    """Work of encoding ``sequences`` texts of ``length`` tokens (forward only)."""
    return [
        Matmul("encoder layers (forward)", shape.encoder_layers * shape.encoder_layer_params(),
               sequences * length, FORWARD),
        Attention("encoder attention (forward)", shape.d_model, sequences * length * length,
                  shape.encoder_layers, backward=False),
    ]


def decoder_forward_work(shape: Seq2SeqShape, *, sequences: int, target: int, read: int) -> list[Matmul | Attention]:
    """Work of a teacher-forced decoder forward: ``sequences`` targets of ``target`` tokens
    cross-attending to ``read`` states each (their keys / values projected once)."""
    d = shape.d_model
    return [
        Matmul("decoder layers (forward)", shape.decoder_layers * shape.decoder_layer_params(),
               sequences * target, FORWARD),
        Matmul("cross key / value (forward)", shape.decoder_layers * 2 * d * d, sequences * read, FORWARD),
        Matmul("lm_head (forward)", shape.vocab * d, sequences * target, FORWARD),
        Attention("decoder attention (forward)", d, sequences * (causal_pairs(target) + target * read),
                  shape.decoder_layers, backward=False),
    ]


def encoder_step_work(shape: Seq2SeqShape, *, sequences: int, length: int,
                      frozen_layers: int = 0) -> list[Matmul | Attention]:
    """Work of one training step of the encoder alone (a bi-encoder): the bottom
    ``frozen_layers`` forward only, the rest trained."""
    layer, trained = shape.encoder_layer_params(), shape.encoder_layers - frozen_layers
    tokens, pairs = sequences * length, sequences * length * length
    return [
        Matmul("encoder layers (frozen)", frozen_layers * layer, tokens, FORWARD),
        Matmul("encoder layers", trained * layer, tokens, TRAINABLE),
        Attention("encoder attention (frozen)", shape.d_model, pairs, frozen_layers, backward=False),
        Attention("encoder attention", shape.d_model, pairs, trained, backward=True),
    ]


def seq2seq_decode_step_bytes(shape: Seq2SeqShape, *, read: float, generated: float,
                              dtype_bytes: int, sequences: int = 1) -> float:
    """Bytes one decode step reads: the decoder's per-token weights and the (tied) LM head
    once (the cross keys / values were projected before the first step), plus for each of
    ``sequences`` sequences (beams included) the cross-attention keys / values of ``read``
    encoder states and the self-attention KV of ``generated`` tokens, every layer."""
    d = shape.d_model
    weights = shape.decoder_layers * shape.decoder_layer_params() + shape.vocab * d
    kv = sequences * (read + generated) * 2 * d * shape.decoder_layers
    return float(weights + kv) * dtype_bytes
