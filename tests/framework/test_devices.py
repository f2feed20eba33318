"""The device helper (`stages.common.device`) and GPU placement of stage tasks
(`stages.framework.devices`), on a CPU machine: nothing here needs CUDA."""

from __future__ import annotations

import dataclasses
from collections import namedtuple

import pytest
import torch

from stages.common.device import autocast, dtype_of, place_model, resolve_device, to_device
from stages.framework.devices import task_device, task_options, wants_gpu, with_device
from stages.framework.resources import Demand, DemandError, check_fits
from stages.framework.stage import Stage

Pair = namedtuple("Pair", "ids mask")


@dataclasses.dataclass
class Holder:
    scores: torch.Tensor
    label: str
    cached: int = dataclasses.field(default=3, init=False)


def test_to_device_moves_every_tensor_of_a_nested_batch_and_keeps_dtypes():
    batch = {
        "ids": torch.tensor([[1, 2]], dtype=torch.long),
        "mask": torch.tensor([[True, False]]),
        "nested": {"half": torch.zeros(2, dtype=torch.float16), "bf16": torch.ones(2, dtype=torch.bfloat16),
                   "list": [torch.zeros(1), 7, "text"], "tuple": (torch.zeros(1, dtype=torch.int32), None)},
        "pair": Pair(torch.zeros(1), torch.ones(1)),
        "holder": Holder(torch.zeros(2), "kept"),
        "count": 5,
    }
    moved = to_device(batch, "meta")  # the meta device stands in for a GPU on a CPU machine
    flat = [moved["ids"], moved["mask"], moved["nested"]["half"], moved["nested"]["bf16"],
            moved["nested"]["list"][0], moved["nested"]["tuple"][0], moved["pair"].ids, moved["pair"].mask,
            moved["holder"].scores]
    assert all(t.device.type == "meta" for t in flat)
    assert [t.dtype for t in flat] == [torch.long, torch.bool, torch.float16, torch.bfloat16, torch.float32,
                                       torch.int32, torch.float32, torch.float32, torch.float32]
    assert moved["nested"]["list"][1:] == [7, "text"] and moved["nested"]["tuple"][1] is None
    assert isinstance(moved["pair"], Pair) and moved["holder"].label == "kept" and moved["count"] == 5
    assert batch["ids"].device.type == "cpu"  # the input is left as it was


def test_precision_names_and_autocast_on_cpu():
    assert dtype_of("bf16") is torch.bfloat16 and dtype_of("fp32") is torch.float32
    with pytest.raises(ValueError, match=r"eval.dtype: value 'fp8'"):
        dtype_of("fp8", "eval.dtype")
    layer = torch.nn.Linear(4, 4)
    x = torch.randn(2, 4)
    with autocast("cpu", "bf16"):
        assert layer(x).dtype is torch.bfloat16
    with autocast("cpu", "fp32"):
        assert layer(x).dtype is torch.float32
    assert layer.weight.dtype is torch.float32  # autocast leaves the weights alone


def test_place_model_sets_device_dtype_and_eval_mode():
    model = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.Dropout(0.5)).train()
    placed = place_model(model, "cpu", "bf16")
    assert not placed.training and next(placed.parameters()).dtype is torch.bfloat16


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the CPU-only answers")
def test_resolve_device_without_cuda():
    assert resolve_device("auto") == torch.device("cpu") and resolve_device("cpu") == torch.device("cpu")
    with pytest.raises(RuntimeError, match=r"run.device='cuda' but this process sees no CUDA device"):
        resolve_device("cuda")
    with pytest.raises(ValueError, match=r"run.device: value 'tpu'"):
        resolve_device("tpu")


class ModelStage(Stage):
    name = "model_stage"
    uses_device = True


class PlainStage(Stage):
    name = "plain_stage"


GPU_CLUSTER = {"CPU": 16.0, "GPU": 1.0}
CPU_CLUSTER = {"CPU": 2.0}


def test_a_model_stage_asks_for_a_gpu_only_where_the_cluster_has_one():
    assert task_options(ModelStage, "auto", GPU_CLUSTER) == {"num_cpus": 1, "num_gpus": 1}
    assert task_options(ModelStage, "auto", CPU_CLUSTER) == {"num_cpus": 1}
    assert task_options(ModelStage, "cpu", GPU_CLUSTER) == {"num_cpus": 1}
    assert task_options(PlainStage, "cuda", GPU_CLUSTER) == {"num_cpus": 1}
    demand = with_device(Demand({"CPU": 1}, lower="x"), ModelStage, "auto", GPU_CLUSTER)
    assert dict(demand) == {"CPU": 1.0, "GPU": 1.0}  # the scheduler's ledger holds the GPU too
    assert not wants_gpu(ModelStage, "auto", CPU_CLUSTER)


def test_run_device_cuda_on_a_cluster_without_gpus_fails_before_anything_starts():
    demand = with_device(Demand({"CPU": 1}), ModelStage, "cuda", CPU_CLUSTER)
    with pytest.raises(DemandError, match=r"needs GPU=1 .* has GPU=0; lower run.device \(auto or cpu\)"):
        check_fits("model_stage", demand, CPU_CLUSTER)


def test_task_device_inside_the_task():
    assert task_device(PlainStage, "cuda", [0]) == "cpu"  # no models of its own: never a GPU
    assert task_device(ModelStage, "auto", []) == "cpu"  # no GPU granted
    assert task_device(ModelStage, "cpu", [0]) == "cpu"


def test_device_is_placement_not_part_of_the_cache_key():
    from stages.config import load_config
    from stages.framework.keys import cache_key
    from stages.registry import DAG

    stage = DAG.get("eval_qa")
    assert stage.uses_device and "eval.dtype" in stage.config_keys
    keys = {cache_key(stage, load_config([f"run.device={d}", "eval.dtype=fp32"]), {}) for d in ("auto", "cpu", "cuda")}
    assert len(keys) == 1
    assert cache_key(stage, load_config(["eval.dtype=bf16"]), {}) not in keys
    # eval.dtype=auto is decided by the device (stages.config.precision): cuda's auto is bf16, keyed so
    assert load_config(["run.device=cuda", "eval.dtype=auto"]).eval.dtype == "bf16"


def test_every_stage_that_loads_a_model_declares_it():
    from stages.registry import DAG

    loaders = {"eval_reconstruction", "eval_similarity", "analyze_nuggets", "eval_lm", "eval_qa",
               "eval_summarization", "calibrate_threshold", "eval_nugget2d_ae", "eval_nugget_lm", "eval_re_restoration",
               "eval_re_retrieval", "eval_re_downstream", "eval_harness", "eval_efficiency"}
    assert {name for name, s in DAG.stages.items() if s.uses_device} == loaders
    assert all("eval.dtype" in DAG.get(name).config_keys for name in loaders)
