"""The device guard (`stages.common.device_guard`): what it catches, what it leaves to the
libraries, and that a planted ``torch.zeros(n)`` fails a stage and a Ray Train worker."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from stages.common import device_guard as guard_module
from stages.common.device_guard import DeviceDisciplineError, DeviceGuard
from tests.device_discipline.planting import PLANTED_LINE, planted

REPO = Path(__file__).resolve().parents[2]
STAGE_FILE = REPO / "stages" / "evaluate" / "nugget" / "similarity.py"


def test_the_suite_runs_under_the_guard(device_guard):
    """tests/conftest.py turns it on for every test and, through the environment, for the
    stages and training workers the tests start."""
    assert guard_module.enabled() and isinstance(device_guard, DeviceGuard)


def test_a_device_less_factory_in_project_code_raises_naming_the_line():
    make = planted(lambda: None, STAGE_FILE)
    with DeviceGuard() as guard, pytest.raises(DeviceDisciplineError) as caught:
        make()
    assert f"{STAGE_FILE}:{PLANTED_LINE}" in str(caught.value) and "torch.zeros" in str(caught.value)
    assert [(v.file, v.line, v.factory) for v in guard.violations] == [(str(STAGE_FILE), PLANTED_LINE, "zeros")]


def test_named_devices_copies_and_module_state_pass():
    source = (
        "def ok(x):\n"
        "    torch.zeros(2, device=x.device)\n"
        "    torch.zeros_like(x)\n"
        "    x.new_zeros(3)\n"
        "    torch.tensor(x)\n"                    # a copy keeps its tensor's device
        "    torch.nn.Linear(4, 4)\n"              # a module's parameters follow .to(device)
        "    return torch.arange(3, device='cpu')\n"
    )
    namespace = {"torch": torch}
    exec(compile(source, str(STAGE_FILE), "exec"), namespace)  # noqa: S102
    with DeviceGuard() as guard:
        namespace["ok"](torch.ones(2, device="cpu"))
    assert guard.violations == []


def test_library_internals_and_test_code_are_not_checked():
    from transformers import LlamaConfig, StaticCache

    config = LlamaConfig(hidden_size=16, intermediate_size=32, num_hidden_layers=2, num_attention_heads=2,
                         num_key_value_heads=2, vocab_size=32)
    with DeviceGuard() as guard:
        torch.zeros(3)  # this file: tests build their inputs freely
        cache = StaticCache(config=config, max_cache_len=8)  # transformers places its own tensors
    assert guard.violations == [] and cache is not None


def test_the_guard_is_off_without_the_environment_switch(monkeypatch):
    monkeypatch.delenv(guard_module.ENV, raising=False)
    with guard_module.from_env() as guard:
        assert guard is None


def test_a_planted_tensor_in_a_stage_hot_path_fails_the_stage(monkeypatch, tmp_path):
    """eval_similarity ranks every task's candidates through ``task_reciprocal_ranks``:
    planting ``torch.zeros(4)`` there (as code of its module) fails the stage under the guard."""
    from stages.nugget import eval_similarity
    from stages.nugget.eval_similarity import EvalSimilarity
    from tests.evaluation.fixtures import SMALL, context, make_eval_inputs

    inputs = make_eval_inputs(tmp_path / "inputs")
    monkeypatch.setattr(eval_similarity, "task_reciprocal_ranks",
                        planted(eval_similarity.task_reciprocal_ranks, STAGE_FILE))
    ctx = context(EvalSimilarity, inputs, tmp_path / "out", SMALL)
    with pytest.raises(DeviceDisciplineError, match=f"similarity.py:{PLANTED_LINE}"):
        EvalSimilarity().run(ctx)


@pytest.mark.ray
@pytest.mark.parametrize("in_process", [True, False], ids=["in_process", "worker_group"])
def test_a_planted_tensor_in_a_training_worker_fails_the_fit(ray_local, mt_artifacts, tmp_path, monkeypatch,
                                                              in_process):
    """The loop runs under the guard in process (a one-worker CPU fit) and in a Ray Train worker
    (NUGGET_DEVICE_GUARD reaches it through the environment): a device-less tensor in the task's
    collate fails the fit, named."""
    from stages.common.device_guard import DeviceDisciplineError
    from stages.config import load_config
    from stages.training.launch import fit
    from tests.training.conftest import TINY
    from tests.training.test_train_nugget import _task

    monkeypatch.setenv("NUGGET_TRAIN_IN_PROCESS", "1" if in_process else "0")
    data, tok = mt_artifacts
    cfg = load_config([*TINY, "train.nugget.num_workers=1", "train.nugget.max_steps=2"])
    task = _task(cfg, data, tok)
    task.collate = planted(task.collate, REPO / "stages" / "train" / "nugget_task.py")
    with pytest.raises(Exception) as caught:
        fit(task, cfg.train.nugget, str(tmp_path), "planted", seed=0, download_to=tmp_path / "final")
    # in process the error itself; from a worker Ray's error, which names it
    assert isinstance(caught.value, DeviceDisciplineError) or "DeviceDisciplineError" in str(caught.value)
    assert isinstance(caught.value, DeviceDisciplineError) is in_process
    assert f"nugget_task.py:{PLANTED_LINE}" in str(caught.value)
