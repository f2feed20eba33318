"""Roofline arithmetic of the benchmarks: the least time the hardware needs for a step.

Decode is memory-bound: a generated token costs the bytes one step must read (the
weights once, plus the KV the step attends to) over the memory bandwidth. A training step
is compute-bound: its matmul and attention FLOPs over the peak dense bf16 FLOP/s. A
benchmark reports ``measured / roofline`` (decode, training) or ``measured / roofline``
tokens/s (serving) beside each measured number.

The counts are those of the ideal computation, not of what an implementation launches:

- **Decode bytes per step** (`decode_step_bytes`): every decoder layer's parameters, the
  final norm, the LM head and the embedding row of the fed token, once per step
  (`DecoderShape.step_weight_params`), plus for each sequence of the batch the KV of the
  tokens it attends to (`DecoderShape.kv_bytes_per_token` x tokens): nuggets + prompt +
  generated for Nugget2D, the whole context + prompt + generated for Full / HF generate.
  Theta's merged copy of the targeted weights replaces the originals during decoding, so
  it adds no reads; a static cache's unused slots and the mask are not counted.
- **Training FLOPs** (`flops` of a list of work items): a matmul with ``P`` parameters
  applied to ``T`` tokens costs ``2 P T`` forward; backward costs ``2 P T`` for the
  activation gradient when anything below needs a gradient and another ``2 P T`` for the
  weight gradient when the weight is trained. So per parameter and token: 6 for a trained
  weight (`TRAINABLE`), 4 for a frozen weight that gradients pass through (`FROZEN`, the
  base LM under LoRA), 2 for a forward only (`FORWARD`: frozen layers nothing below needs
  gradients from, and the forward that activation checkpointing recomputes). LoRA on a
  ``d_in x d_out`` module adds ``r (d_in + d_out)`` trained parameters per token that runs
  it. Attention adds ``4 d`` FLOPs per visible (query, key) pair per layer forward
  (``q k^T`` and ``p v``) and ``8 d`` backward, ``d`` = heads x head dim; only visible
  pairs count (causal: ``T (T + 1) / 2`` per row). Norms, activations, softmax, the loss
  and the optimizer are elementwise and not counted.

The bandwidth and peak FLOP/s come from `DEVICE_PEAKS` by the CUDA device's name, or from
the benchmark's ``--bandwidth-gbs`` / ``--peak-tflops``; with neither the roofline is
unknown (``None``), never guessed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

#: Substring of ``torch.cuda.get_device_name()`` -> (memory bandwidth GB/s, dense bf16
#: TFLOP/s without sparsity), from the vendor datasheets: NVIDIA H100 Tensor Core GPU
#: datasheet (H100 SXM: 3.35 TB/s HBM3, 989 bf16 TFLOPS dense, 1,979 with sparsity);
#: NVIDIA H200 Tensor Core GPU datasheet (H200 SXM: 4.8 TB/s HBM3e, 989 bf16 TFLOPS dense);
#: NVIDIA A100 Tensor Core GPU datasheet (A100 80GB SXM: 2,039 GB/s, 80GB PCIe: 1,935
#: GB/s; 312 bf16 TFLOPS dense). First match wins, so the more specific names come first.
DEVICE_PEAKS: dict[str, tuple[float, float]] = {
    "H100 80GB HBM3": (3350.0, 989.0),
    "H200": (4800.0, 989.0),
    "A100-SXM4-80GB": (2039.0, 312.0),
    "A100 80GB PCIe": (1935.0, 312.0),
}

#: FLOPs per parameter per token (see the module docstring).
FORWARD, FROZEN, TRAINABLE = 2, 4, 6


@dataclass(frozen=True)
class Peaks:
    """What the roofline divides by; ``None`` = unknown (no table entry, no override)."""

    bandwidth_gbs: float | None
    peak_tflops: float | None
    source: str  # where the numbers come from, for the results file

    def seconds_for_bytes(self, nbytes: float) -> float | None:
        return None if self.bandwidth_gbs is None else nbytes / (self.bandwidth_gbs * 1e9)

    def seconds_for_flops(self, flops: float) -> float | None:
        return None if self.peak_tflops is None else flops / (self.peak_tflops * 1e12)


def device_peaks(device_name: str, bandwidth_gbs: float | None = None,
                 peak_tflops: float | None = None) -> Peaks:
    """The peaks of ``device_name`` from `DEVICE_PEAKS`, each overridden when given."""
    for key, (bw, tflops) in DEVICE_PEAKS.items():
        if key in device_name:
            table, source = (bw, tflops), f"datasheet entry {key!r}"
            break
    else:
        table, source = (None, None), f"no datasheet entry for {device_name!r}"
    for value, flag in ((bandwidth_gbs, "--bandwidth-gbs"), (peak_tflops, "--peak-tflops")):
        if value is not None and value <= 0:
            raise ValueError(f"{flag}={value}: must be > 0")
    if bandwidth_gbs is not None or peak_tflops is not None:
        source += "; overridden: " + ", ".join(
            f"{k}={v}" for k, v in (("bandwidth_gbs", bandwidth_gbs), ("peak_tflops", peak_tflops))
            if v is not None)
    return Peaks(bandwidth_gbs if bandwidth_gbs is not None else table[0],
                 peak_tflops if peak_tflops is not None else table[1], source)


def ratio(measured: float, roofline: float | None) -> float | None:
    """``measured / roofline``, ``None`` when the roofline is unknown."""
    return None if roofline is None else measured / roofline


def fmt_ratio(value: float | None, suffix: str = "x") -> str:
    """A ratio for a results table: ``2.31x`` or ``unknown``."""
    return "unknown" if value is None else f"{value:.2f}{suffix}"


# --- decoder-only LMs (LLaMA family) -----------------------------------------------


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
        get = (lambda k, d=None: config.get(k, d)) if isinstance(config, Mapping) \
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


# --- training FLOPs --------------------------------------------------------------


@dataclass(frozen=True)
class Matmul:
    """``params`` weights applied to ``tokens`` tokens at ``per_param_token`` FLOPs
    (`FORWARD` / `FROZEN` / `TRAINABLE`)."""

    name: str
    params: int
    tokens: int
    per_param_token: int

    def flops(self) -> float:
        return float(self.per_param_token) * self.params * self.tokens


@dataclass(frozen=True)
class Attention:
    """Scores and weighted values of ``pairs`` visible (query, key) pairs in each of
    ``layers`` layers of width ``width`` (heads x head dim); ``backward``: also their
    gradients."""

    name: str
    width: int
    pairs: int
    layers: int
    backward: bool

    def flops(self) -> float:
        return (12 if self.backward else 4) * float(self.width) * self.pairs * self.layers


def flops(work: Iterable[Matmul | Attention]) -> float:
    """Total FLOPs of a step's work items."""
    return sum(item.flops() for item in work)


def causal_pairs(n: int) -> int:
    """Visible (query, key) pairs of ``n`` tokens under a causal mask."""
    return n * (n + 1) // 2


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


# --- encoder-decoders (BART) -------------------------------------------------------


@dataclass(frozen=True)
class Seq2SeqShape:
    """The sizes of a BART-style encoder-decoder (tied LM head)."""

    d_model: int
    encoder_layers: int
    decoder_layers: int
    heads: int
    ffn: int
    vocab: int


def seq2seq_step_work(shape: Seq2SeqShape, *, batch: int, source: int, target: int,
                      nuggets: int | None = None, frozen_layers: int = 0,
                      scorer_hidden: int | None = None) -> list[Matmul | Attention]:
    """Work of one full fine-tuning step of a BART-style model (every weight trained).

    ``nuggets=None``: vanilla: the decoder's cross-attention reads all ``source`` states.
    ``nuggets=k``: Nugget: the encoder's bottom ``frozen_layers`` layers (and embeddings)
    frozen and nothing below them needs gradients (forward only), the scorer FFN
    (``d -> scorer_hidden -> 1``, trained) on every source token, and cross-attention
    keys / values projected from, and attending to, the ``k`` nuggets only.
    Per-layer sizes: encoder ``4 d^2 + 2 d ffn``; decoder self-attention and the
    cross-attention query / output ``6 d^2 + 2 d ffn`` on target tokens, the cross
    key / value projections ``2 d^2`` on the states they read. Bidirectional encoder
    attention: ``source^2`` pairs per row; decoder: causal, plus ``target x read`` cross.
    """
    d, ffn = shape.d_model, shape.ffn
    read = source if nuggets is None else nuggets
    src, tgt = batch * source, batch * target
    encoder_layer = 4 * d * d + 2 * d * ffn
    frozen = 0 if nuggets is None else frozen_layers
    work: list[Matmul | Attention] = [
        Matmul("encoder layers (frozen)", frozen * encoder_layer, src, FORWARD),
        Matmul("encoder layers", (shape.encoder_layers - frozen) * encoder_layer, src, TRAINABLE),
        Matmul("decoder layers", shape.decoder_layers * (6 * d * d + 2 * d * ffn), tgt, TRAINABLE),
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

