"""Bytes and FLOPs of a LLaMA-family decoder-only LM (Nugget2D's base): what one decode
step reads and what one LoRA training step computes (counting rules: `stages.costs.work`).

- **Decode bytes per step** (`decode_step_bytes`): every decoder layer's parameters, the
  final norm, the LM head and the embedding row of the fed token, once per step
  (`DecoderShape.step_weight_params`), plus for each sequence of the batch the KV of the
  tokens it attends to (`DecoderShape.kv_bytes_per_token` x tokens): nuggets + prompt +
  generated for Nugget2D, the whole context + prompt + generated for Full / HF generate.
  Theta's merged copy of the targeted weights replaces the originals during decoding, so
  it adds no reads; a static cache's unused slots and the mask are not counted.
- **LoRA training FLOPs** (`lora_step_work`): the frozen LM's matmuls at `FROZEN`, LoRA's
  ``r (d_in + d_out)`` trained parameters per targeted module and token at `TRAINABLE`,
  attention over the visible pairs, the LM head on the loss's tokens only.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from stages.costs.work import FORWARD, FROZEN, TRAINABLE, Attention, Matmul, causal_pairs


@dataclass(frozen=True)
class DecoderShape:
    """The sizes of a LLaMA-family decoder-only LM that set its bytes and FLOPs."""

    hidden: int
    intermediate: int
    layers: int
    heads: int
    kv_heads: int
    vocab: int
    tied: bool = False  # LM head = input embedding (then no separate embedding row is read)

    @classmethod
    def from_config(cls, config: Mapping[str, object] | object) -> DecoderShape:
        """From a ``LlamaConfig`` or the keyword dict one is built from."""
        get: Callable[..., Any] = (lambda k, d=None: config.get(k, d)) if isinstance(config, Mapping) \
            else (lambda k, d=None: getattr(config, k, d))
        heads = int(get("num_attention_heads"))
        return cls(int(get("hidden_size")), int(get("intermediate_size")),
                   int(get("num_hidden_layers")), heads,
                   int(get("num_key_value_heads") or heads), int(get("vocab_size")),
                   bool(get("tie_word_embeddings", False)))

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads

    @property
    def kv_width(self) -> int:
        return self.kv_heads * self.head_dim

    def attention_modules(self) -> dict[str, tuple[int, int]]:
        """(d_in, d_out) of each attention projection (the LoRA targets)."""
        d, kv = self.hidden, self.kv_width
        return {"q_proj": (d, d), "k_proj": (d, kv), "v_proj": (d, kv), "o_proj": (d, d)}

    def layer_matmul_params(self) -> int:
        """Parameters of one layer's matmuls (attention projections, gate / up / down)."""
        attention = sum(i * o for i, o in self.attention_modules().values())
        return attention + 3 * self.hidden * self.intermediate

    def step_weight_params(self) -> int:
        """Parameters one decode step reads: the layers (matmuls and both norms), the
        final norm, the LM head and (untied) the fed token's embedding row."""
        per_layer = self.layer_matmul_params() + 2 * self.hidden
        row = 0 if self.tied else self.hidden
        return self.layers * per_layer + self.hidden + self.vocab * self.hidden + row

    def kv_bytes_per_token(self, dtype_bytes: int) -> int:
        """Bytes of one token's keys and values over all layers."""
        return 2 * self.layers * self.kv_width * dtype_bytes


def decode_step_bytes(shape: DecoderShape, kv_tokens: float, dtype_bytes: int,
                      batch: int = 1) -> float:
    """Bytes one decode step reads: the weights once, plus ``batch`` sequences' KV of
    ``kv_tokens`` tokens each."""
    return (shape.step_weight_params() * dtype_bytes
            + batch * kv_tokens * shape.kv_bytes_per_token(dtype_bytes))


def decode_kv_tokens(attended: int, base: int, steps: int) -> float:
    """Mean KV length a timed step reads when the timing is ``t(base + steps) - t(base)``
    after ``attended`` tokens (context or nuggets, plus prompt): generated token ``i``
    (0-based) is decoded reading ``attended + i`` cached tokens, ``i`` in ``[base, base +
    steps)``."""
    return attended + base + (steps - 1) / 2


def lora_step_work(shape: DecoderShape, *, batch: int, doc: int, prompt: int, answer: int,
                   rank: int, targets: Iterable[str], nuggets: int | None = None,
                   recompute: str = "none") -> list[Matmul | Attention]:
    """Work of one LoRA training step of a frozen decoder-only LM, loss on the answer.

    ``nuggets=None``: Full fine-tuning on ``doc | prompt | answer`` (causal over all).
    ``nuggets=k``: Nugget2D: the document causal over itself, prompt + answer attending to
    the ``k`` nuggets and causally to themselves; one adapter per token (phi on the
    document, theta on prompt + answer), the scorer's small FFN left out.
    Either way the LM head is counted on the answer tokens only (the loss's logits) and
    every layer is frozen with gradients passing through (LoRA is in every layer).
    ``recompute``: what activation checkpointing runs forward again in backward:
    ``"none"``, ``"all"`` (every layer over every token: HF's per-layer checkpointing and
    the joint pass) or ``"doc"`` (the document pass: the two-pass form's compressor).
    """
    if recompute not in ("none", "all", "doc"):
        raise ValueError(f"recompute={recompute!r}: expected none, all or doc")
    modules = shape.attention_modules()
    unknown = sorted(set(targets) - set(modules))
    if unknown:
        raise ValueError(f"LoRA targets {unknown}: only attention projections {sorted(modules)}")
    lora = sum(rank * (modules[t][0] + modules[t][1]) for t in targets)
    decoder = prompt + answer
    tokens = batch * (doc + decoder)
    pairs = batch * (causal_pairs(doc + decoder) if nuggets is None
                     else causal_pairs(doc) + decoder * nuggets + causal_pairs(decoder))
    L = shape.layers
    work: list[Matmul | Attention] = [
        Matmul("layers", L * shape.layer_matmul_params(), tokens, FROZEN),
        Matmul("lora", L * lora, tokens, TRAINABLE),
        Matmul("lm_head", shape.vocab * shape.hidden, batch * answer, FROZEN),
        Attention("attention", shape.hidden, pairs, L, backward=True),
    ]
    if recompute != "none":
        again = tokens if recompute == "all" else batch * doc
        again_pairs = pairs if recompute == "all" else batch * causal_pairs(doc)
        work += [
            Matmul("recomputed layers", L * shape.layer_matmul_params(), again, FORWARD),
            Matmul("recomputed lora", L * lora, again, FORWARD),
            Attention("recomputed attention", shape.hidden, again_pairs, L, backward=False),
        ]
    return work


def lm_forward_work(shape: DecoderShape, *, tokens: int, pairs: int, logits: int,
                    layers: int | None = None) -> list[Matmul | Attention]:
    """Work of a forward pass (no gradients) over ``tokens`` tokens of ``layers`` layers
    (default: all) with ``pairs`` visible attention pairs per layer, and the LM head on
    ``logits`` tokens: prefill before decoding, teacher-forced scoring, scorer features."""
    L = shape.layers if layers is None else layers
    return [
        Matmul("layers (forward)", L * shape.layer_matmul_params(), tokens, FORWARD),
        Matmul("lm_head (forward)", shape.vocab * shape.hidden, logits, FORWARD),
        Attention("attention (forward)", shape.hidden, pairs, L, backward=False),
    ]
