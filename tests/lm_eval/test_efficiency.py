"""eval_efficiency's measurements on a tiny random LLaMA: they run through the decoding eval_qa
runs, a system that attends to more KV reports more bytes, the table carries every number with
its n, and the report's findings judge the cells as the rules say."""

from __future__ import annotations

import math

import pytest
import torch

from stages.common.bandwidth import Bandwidth, copy_bandwidth
from stages.nugget2d.lm import prompted
from stages.nugget2d.lm.efficiency import (
    DecodeSystem,
    decode_systems,
    measure_context,
    step_weight_bytes,
)
from stages.nugget2d.lm.efficiency_table import efficiency_table
from stages.nugget2d.lm.prompted import generate_batch
from stages.nugget2d.lm.train_cost import train_costs
from tests.lm_eval.fixtures import make_base_lm

BANDWIDTH = Bandwidth(10.0, (10.0,), 2**20, "cpu")


def _doc(tokenizer, n: int) -> torch.Tensor:
    ids = tokenizer(" ".join(["the river delta was born in Paris of a city"] * n), add_special_tokens=False)["input_ids"]
    assert len(ids) >= n
    return torch.tensor([ids[:n]])


def test_systems_and_weight_bytes(model):
    labels = [s.label for s in decode_systems([0.1, 0.05], ["snapkv"])]
    assert labels == ["full", "nugget2d_0.1", "nugget2d_0.05", "snapkv_0.1", "snapkv_0.05"]
    lm = model.lm
    base = sum(p.numel() * p.element_size() for name, p in lm.named_parameters() if "lora_" not in name)
    embedding = lm.get_input_embeddings().weight  # untied in the fixture: a lookup reads one row
    assert step_weight_bytes(model) == base - embedding.numel() * embedding.element_size()


def test_measurements_go_through_the_evaluations_decode_and_bytes_follow_the_kv(model, tokenizer, monkeypatch):
    calls: list[int] = []
    real = prompted.decode

    def spy(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(prompted, "decode", spy)
    doc, prompt = _doc(tokenizer, 200), _doc(tokenizer, 6)
    systems = [DecodeSystem("full"), DecodeSystem("nugget2d", 0.1), DecodeSystem("nugget2d", 0.05),
               DecodeSystem("snapkv", 0.1)]
    costs = measure_context(model, doc, prompt, systems, warmup=1, steps=2, repeats=3)
    # per system: one untimed decode, then two per repeat; eval_qa's generate_batch calls the same function
    assert len(calls) == len(systems) * (1 + 2 * 3)
    generate_batch(model, tokenizer, doc.tolist(), prompt.tolist(), ratio=0.1, max_new_tokens=2)
    assert len(calls) == len(systems) * 7 + 1
    by = {c.system.label: c for c in costs}
    assert [by[k].kept for k in ("full", "nugget2d_0.1", "nugget2d_0.05", "snapkv_0.1")] == [200, 20, 10, 20]
    # more KV attended, more bytes reported: the document's KV and the cache a step reads
    assert by["full"].context_kv_bytes > by["nugget2d_0.1"].context_kv_bytes > by["nugget2d_0.05"].context_kv_bytes
    assert by["full"].cache_bytes > by["nugget2d_0.1"].cache_bytes > by["nugget2d_0.05"].cache_bytes
    assert by["snapkv_0.1"].context_kv_bytes == by["nugget2d_0.1"].context_kv_bytes
    per_position = by["full"].context_kv_bytes // 200
    assert by["nugget2d_0.1"].context_kv_bytes == 20 * per_position
    # the cache: document KV + prompt + every generated token of the longer decode
    assert by["full"].cache_bytes == per_position * (200 + by["full"].prompt + 1 + 2)
    assert by["full"].prompt == 6
    # the same bytes eval_qa's cost accounting reports for the same decode
    gens = generate_batch(model, tokenizer, doc.tolist(), prompt.tolist(), ratio=None, max_new_tokens=1)
    assert gens[0].cost.kv_bytes == per_position * (200 + 6)
    assert all(len(c.ms) == 3 and len(c.prefill_ms) == 1 for c in costs)


def test_table_carries_each_number_with_its_n_and_pairs_repeats(model, tokenizer):
    doc, prompt = _doc(tokenizer, 120), _doc(tokenizer, 4)
    systems = decode_systems([0.1], ["streaming_llm"])
    costs = measure_context(model, doc, prompt, systems, warmup=1, steps=1, repeats=20)
    base = make_base_lm(len(tokenizer))
    ids = _doc(tokenizer, 40)
    train = train_costs(model, base, ids, prompt=4, answer=6, steps=1)
    assert [t.system for t in train] == ["full_ft", "nugget2d"]
    assert all(t.activation_bytes > 0 and t.trainable > 0 and t.peak_bytes is None for t in train)
    table = efficiency_table(costs, train, BANDWIDTH, "tiny", warmup=1, steps=1)
    rows = {r.system: r for r in table.rows}
    full, nugget = rows["full:120"], rows["nugget2d_0.1:120"]
    assert nugget.paper_row == "nugget2d_0.1@120" and full.n == 20
    assert nugget.metrics["kv_share"] == pytest.approx(12 / 120)
    assert full.metrics["speedup"] == pytest.approx(1.0) and full.metrics["kv_share"] == 1.0
    assert nugget.units["ms_per_token"].ids == full.units["ms_per_token"].ids  # repeat i pairs them
    assert "ms_per_token" in nugget.interval  # 20 repeats: an interval
    bound = 1000 * BANDWIDTH.seconds_for(costs[1].read_bytes)
    assert nugget.metrics["bound_ms"] == pytest.approx(bound)
    assert rows["train_nugget2d"].metrics["step_ratio"] == pytest.approx(train[1].mean_s / train[0].mean_s)
    assert rows["train_full_ft"].metrics["peak_mb"] is None
    flat = table.flat_metrics()
    assert math.isfinite(flat["nugget2d_0.1:120/ms_per_token"])


def test_copy_bandwidth_is_positive_and_refuses_nonsense():
    bw = copy_bandwidth("cpu", megabytes=8, repeats=2)
    assert bw.gbs > 0 and len(bw.samples) == 2 and bw.buffer_bytes == 8 * 2**20
    assert bw.seconds_for(bw.gbs * 1e9) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="megabytes"):
        copy_bandwidth("cpu", megabytes=0)
