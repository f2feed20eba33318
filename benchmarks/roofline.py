"""Roofline arithmetic of the benchmarks: the least time the hardware needs for a step.

Decode is memory-bound: a generated token costs the bytes one step must read (the
weights once, plus the KV the step attends to) over the memory bandwidth. A training step
is compute-bound: its matmul and attention FLOPs over the peak dense bf16 FLOP/s. A
benchmark reports ``measured / roofline`` (decode, training) or ``measured / roofline``
tokens/s (serving) beside each measured number.

The counting lives in the library, where the cost plan of ``nugget run --dry-run
--cost-device`` uses it too (`stages.costs`; the stages may not import the benchmarks):
the FLOPs per parameter and token and the work items in `stages.costs.work`, the decode
bytes and the LoRA step of a LLaMA-family LM in `stages.costs.decoder`, the BART-style
step in `stages.costs.seq2seq`, the device peaks in `stages.costs.peaks`. This module
re-exports them under the names the benchmarks and their tests use.

The bandwidth and peak FLOP/s come from `DEVICE_PEAKS` by the CUDA device's name, or from
the benchmark's ``--bandwidth-gbs`` / ``--peak-tflops``; with neither the roofline is
unknown (``None``), never guessed.
"""

from __future__ import annotations

from stages.costs.decoder import DecoderShape, decode_kv_tokens, decode_step_bytes, lora_step_work
from stages.costs.peaks import DEVICE_PEAKS, Peaks, device_peaks, fmt_ratio, ratio
from stages.costs.seq2seq import Seq2SeqShape, seq2seq_step_work
from stages.costs.work import FORWARD, FROZEN, TRAINABLE, Attention, Matmul, causal_pairs, flops

__all__ = [
    "DEVICE_PEAKS", "FORWARD", "FROZEN", "TRAINABLE", "Attention", "DecoderShape", "Matmul", "Peaks",
    "Seq2SeqShape", "causal_pairs", "decode_kv_tokens", "decode_step_bytes", "device_peaks", "flops",
    "fmt_ratio", "lora_step_work", "ratio", "seq2seq_step_work",
]
