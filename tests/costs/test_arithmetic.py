"""`stages.costs`: the forward / encoder / decode counts added beside the roofline's step
counts (tests/benchmarks/test_roofline.py holds those), and device-hours, against hand
computation on the tiny shapes of test_roofline (LLaMA d 8, ffn 16, 2 layers, 2 heads, 1
KV head, vocab 32; BART d 4, 2 + 2 layers, ffn 8, vocab 10)."""

from __future__ import annotations

import pytest

from stages.costs.decoder import DecoderShape, lm_forward_work
from stages.costs.efficiency import Share
from stages.costs.estimate import CPU, EVAL, TRAIN, Rates, StageCost, Work, timed
from stages.costs.peaks import device_peaks, table_entry
from stages.costs.seq2seq import (
    Seq2SeqShape,
    decoder_forward_work,
    encoder_forward_work,
    encoder_step_work,
    seq2seq_decode_step_bytes,
)
from stages.costs.work import flops

LLAMA = DecoderShape(hidden=8, intermediate=16, layers=2, heads=2, kv_heads=1, vocab=32)
BART = Seq2SeqShape(d_model=4, encoder_layers=2, decoder_layers=2, heads=1, ffn=8, vocab=10)


def test_lm_forward_by_hand():
    # layers 2 * (2 x 576) * 5 tokens; lm_head 2 * 256 * 1; attention 4 * 8 * 15 pairs * 2 layers
    assert flops(lm_forward_work(LLAMA, tokens=5, pairs=15, logits=1)) == 11520 + 512 + 960
    # the scorer's features: 1 layer, no logits
    assert flops(lm_forward_work(LLAMA, tokens=5, pairs=15, logits=0, layers=1)) == 5760 + 480


def test_seq2seq_forward_and_encoder_step_by_hand():
    # encoder layer 4 * 16 + 2 * 4 * 8 = 128 params; 3 texts of 5 tokens: 2 * 2 x 128 * 15 + 4 * 4 * 75 * 2
    assert flops(encoder_forward_work(BART, sequences=3, length=5)) == 7680 + 2400
    # decoder layer 6 * 16 + 64 = 160; 2 targets of 3 reading 4 states: 2 * 2 x 160 * 6, cross k / v
    # 2 * 2 x 32 * 8, lm_head 2 * 40 * 6, attention 4 * 4 * 2 x (6 + 12) * 2 layers
    assert flops(decoder_forward_work(BART, sequences=2, target=3, read=4)) == 3840 + 1024 + 480 + 1152
    # bi-encoder step, bottom layer frozen: 2 * 128 * 5 + 6 * 128 * 5; 4 * 4 * 25 + 12 * 4 * 25
    assert flops(encoder_step_work(BART, sequences=1, length=5, frozen_layers=1)) == 1280 + 3840 + 400 + 1200


def test_seq2seq_decode_bytes_by_hand():
    # weights 2 x 160 + 40 = 360; KV 3 sequences x (4 read + 2 generated) x 2 x 4 x 2 layers = 288; bf16
    assert seq2seq_decode_step_bytes(BART, read=4, generated=2, dtype_bytes=2, sequences=3) == (360 + 288) * 2


def rates(train: float = 0.5, decode: float = 0.25, scaling: float = 0.8) -> Rates:
    peaks = device_peaks(table_entry("h100"))  # 989 TFLOP/s, 3350 GB/s
    return Rates(peaks, Share("t", train, False, ""), Share("d", decode, False, ""), scaling)


def test_device_hours_by_hand():
    # one hour of compute at half the peak, plus one hour of reads at a quarter of the bandwidth
    cost = StageCost("s", EVAL, (Work("w", flops=989e12 * 0.5 * 3600, nbytes=3350e9 * 0.25 * 3600),))
    t = timed(cost, rates(), gpus=8)
    assert t.device_hours == pytest.approx(2.0)
    assert (t.devices, t.wall_hours) == (1, pytest.approx(2.0)) and "one device" in t.limit


def test_training_spreads_over_at_most_its_examples_per_step():
    cost = StageCost("s", TRAIN, (Work("w", flops=989e12 * 0.5 * 3600 * 10),), max_devices=4)
    assert timed(cost, rates(), gpus=1).wall_hours == pytest.approx(10.0)
    t = timed(cost, rates(), gpus=64)
    assert t.devices == 4 and t.wall_hours == pytest.approx(10.0 / (4 * 0.8)) and "at most 4" in t.limit
    assert timed(cost, rates(), gpus=2).wall_hours == pytest.approx(10.0 / 1.6)


def test_cpu_stage_costs_nothing():
    t = timed(StageCost("build", CPU, notes=("data",)), rates(), gpus=64)
    assert t.device_hours == 0 and t.wall_hours == 0


def test_device_names():
    assert table_entry("H100") == table_entry("NVIDIA H100 80GB HBM3") == "H100 80GB HBM3"
    assert table_entry("a100-pcie") == "A100 80GB PCIe"
    with pytest.raises(ValueError, match="known: h100, h200"):
        table_entry("v100")
