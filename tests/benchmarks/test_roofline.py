"""`benchmarks.roofline`: the bytes and FLOPs of a step against hand computation for a
tiny LLaMA (d 8, ffn 16, 2 layers, 2 heads, 1 KV head, vocab 32) and a tiny BART, and
the device table / overrides."""

from __future__ import annotations

import pytest

from benchmarks.roofline import (
    DecoderShape,
    Seq2SeqShape,
    decode_kv_tokens,
    decode_step_bytes,
    device_peaks,
    flops,
    fmt_ratio,
    lora_step_work,
    ratio,
    seq2seq_step_work,
)

TINY = dict(hidden_size=8, intermediate_size=16, num_hidden_layers=2, num_attention_heads=2,
            num_key_value_heads=1, vocab_size=32)


def tiny_llama():
    from transformers import LlamaConfig, LlamaForCausalLM

    return LlamaForCausalLM(LlamaConfig(**TINY, tie_word_embeddings=False))


def test_decode_bytes_by_hand():
    shape = DecoderShape.from_config(TINY)
    # per layer: q 64 + k 32 + v 32 + o 64 + mlp 3 * 8 * 16 = 576 matmul, + 2 norms of 8
    assert shape.layer_matmul_params() == 576
    # 2 layers x 592 + final norm 8 + lm_head 256 + one embedding row 8
    assert shape.step_weight_params() == 1456
    assert shape.kv_bytes_per_token(2) == 2 * 2 * 4 * 2  # k and v, 2 layers, 1 head x 4, bf16
    assert decode_step_bytes(shape, 10, 2, batch=3) == 1456 * 2 + 3 * 10 * 32
    # generated tokens 8..12 read 20 + 8 .. 20 + 12 cached tokens: mean 30
    assert decode_kv_tokens(20, base=8, steps=5) == 30


def test_step_weights_are_the_model_less_its_embedding_table():
    lm = tiny_llama()
    total = sum(p.numel() for p in lm.parameters())
    shape = DecoderShape.from_config(lm.config)
    assert shape.step_weight_params() == total - 32 * 8 + 8


def test_lora_step_flops_by_hand():
    shape = DecoderShape.from_config(TINY)
    kw = dict(batch=2, doc=6, prompt=1, answer=3, rank=2, targets=["q_proj", "k_proj", "v_proj", "o_proj"])
    # layers 4 * (2 x 576) * 20 tokens; LoRA 6 * 2 layers x 2 * (16 + 12 + 12 + 16) * 20;
    # lm_head 4 * 256 * 6 answer tokens; attention 12 * 8 * 2 rows x 55 pairs * 2 layers
    assert flops(lora_step_work(shape, **kw)) == 92160 + 26880 + 6144 + 21120
    # Nugget2D, 1 nugget: pairs per row 21 (document) + 4 x 1 + 10 (prompt + answer)
    assert flops(lora_step_work(shape, nuggets=1, **kw)) == 92160 + 26880 + 6144 + 13440
    # checkpointing: the forward again (2 per parameter and token, 4 d per pair)
    assert flops(lora_step_work(shape, recompute="all", **kw)) == 146304 + 46080 + 8960 + 7040
    assert flops(lora_step_work(shape, nuggets=1, recompute="doc", **kw)) == 138624 + 27648 + 5376 + 2688


def test_lora_parameter_count_matches_peft():
    from peft import LoraConfig, get_peft_model

    model = get_peft_model(tiny_llama(), LoraConfig(r=2, target_modules=["q_proj", "k_proj", "v_proj", "o_proj"]))
    trained = sum(p.numel() for p in model.parameters() if p.requires_grad)
    shape = DecoderShape.from_config(TINY)
    work = {w.name: w for w in lora_step_work(shape, batch=1, doc=1, prompt=1, answer=1, rank=2,
                                               targets=["q_proj", "k_proj", "v_proj", "o_proj"])}
    assert work["lora"].params == trained == 224


def test_lora_step_rejects_unknown_targets():
    with pytest.raises(ValueError, match="gate_proj"):
        lora_step_work(DecoderShape.from_config(TINY), batch=1, doc=1, prompt=1, answer=1, rank=2,
                       targets=["gate_proj"])


def test_seq2seq_step_flops_by_hand():
    shape = Seq2SeqShape(d_model=4, encoder_layers=2, decoder_layers=2, heads=1, ffn=8, vocab=10)
    kw = dict(batch=1, source=5, target=3)
    # encoder 6 * 2 x 128 * 5; decoder 6 * 2 x 160 * 3; cross k / v 6 * 64 * 5; lm_head 6 * 40 * 3;
    # attention 12 * 4 * (25 x 2 + 6 x 2 + 15 x 2)
    assert flops(seq2seq_step_work(shape, **kw)) == 7680 + 5760 + 1920 + 720 + 2400 + 576 + 1440
    # Nugget, 1 nugget, bottom layer frozen: its forward only (2 * 128 * 5, 4 * 4 * 25),
    # cross k / v on the nugget, scorer 6 * (16 + 4) * 5
    assert flops(seq2seq_step_work(shape, nuggets=1, frozen_layers=1, **kw)) == (
        1280 + 3840 + 5760 + 384 + 720 + 400 + 1200 + 576 + 288 + 600)


def test_device_table_and_overrides():
    h100 = device_peaks("NVIDIA H100 80GB HBM3")
    assert (h100.bandwidth_gbs, h100.peak_tflops) == (3350.0, 989.0)
    assert device_peaks("NVIDIA H200").bandwidth_gbs == 4800.0
    assert device_peaks("NVIDIA A100-SXM4-80GB").peak_tflops == 312.0
    unknown = device_peaks("Tesla T4")
    assert unknown.seconds_for_bytes(1e9) is None and unknown.seconds_for_flops(1e12) is None
    assert fmt_ratio(ratio(1.0, unknown.seconds_for_bytes(1e9))) == "unknown"
    half = device_peaks("Tesla T4", bandwidth_gbs=2.0)
    assert half.seconds_for_bytes(1e9) == 0.5 and half.peak_tflops is None
    assert device_peaks("NVIDIA H200", peak_tflops=100.0).seconds_for_flops(1e12) == 0.01
    with pytest.raises(ValueError, match="bandwidth"):
        device_peaks("cpu", bandwidth_gbs=0.0)
