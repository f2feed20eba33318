"""One ``optimizer`` value, one optimiser on both backends (`stages.training.engine.OPTIMIZERS`):
``adam`` is Adam with weight decay as a coupled L2 term, ``adamw`` decoupled weight decay.
DeepSpeed's own default (``adam_w_mode=True``) turned ``adam`` into AdamW."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from stages.config import load_config
from stages.training.engine import OPTIMIZERS, DDPEngine, deepspeed_config, optimizer_of
from tests.training.fixtures import nugget_job

REPO = Path(__file__).resolve().parents[2]
CPU = torch.device("cpu")


@pytest.mark.parametrize(("name", "torch_class", "decoupled"),
                         [("adam", torch.optim.Adam, False), ("adamw", torch.optim.AdamW, True)])
def test_both_backends_map_the_value_alike(name, torch_class, decoupled):
    job = nugget_job(optimizer=name, weight_decay=0.1)
    engine = DDPEngine(torch.nn.Linear(3, 2), job, find_unused=False, device=CPU)
    assert type(engine.optimizer) is torch_class
    params = deepspeed_config(job)["optimizer"]["params"]
    # DeepSpeed (torch_adam) builds torch.optim.AdamW when adam_w_mode, else torch.optim.Adam
    assert params["torch_adam"] and params["adam_w_mode"] is decoupled
    assert params["weight_decay"] == 0.1


def test_an_unknown_optimizer_is_refused():
    from stages.config.validate import ConfigError

    with pytest.raises(ConfigError, match=r"train.nugget.optimizer: value 'sgd'"):
        load_config(["train.nugget.optimizer=sgd"])
    with pytest.raises(ValueError, match=r"optimizer: value 'sgd'"):
        optimizer_of(nugget_job(optimizer="sgd"))
    assert set(OPTIMIZERS) == {"adam", "adamw"}


ONE_STEP = r"""
import json, os, sys
from types import SimpleNamespace

os.environ.update(DS_ACCELERATOR="cpu", RANK="0", WORLD_SIZE="1", LOCAL_RANK="0", MASTER_ADDR="127.0.0.1")
import torch
import torch.distributed as dist

dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{sys.argv[1]}", rank=0, world_size=1)
from stages.training.engine import DDPEngine, DeepSpeedEngine

loss = lambda module, batch: module(batch["x"]).pow(2).mean()
torch.manual_seed(0)
x = torch.randn(2, 4)
out = {}
for name in ("adam", "adamw"):
    job = SimpleNamespace(batch_size=2, grad_accum=1, precision="fp32", max_grad_norm=None, lr=0.1,
                          betas=(0.9, 0.999), weight_decay=0.5, optimizer=name)
    weights = {}
    for backend, make in (("ddp", lambda m: DDPEngine(m, job, False, torch.device("cpu"))),
                          ("deepspeed", lambda m: DeepSpeedEngine(m, job, torch.device("cpu")))):
        torch.manual_seed(1)
        engine = make(torch.nn.Linear(4, 3))
        for _ in range(3):
            engine.train_step([{"x": x}], job.lr, loss)
        weights[backend] = [p.detach().flatten().tolist() for p in engine.module.parameters()]
    out[name] = weights
print(json.dumps(out))
"""


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_deepspeed_and_ddp_take_the_same_steps(tmp_path):
    """Three steps of a real ZeRO-2 engine on CPU and of the DDP engine from the same
    weights end equal, for each value; and the two values differ (weight decay 0.5)."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "PYTHONDONTWRITEBYTECODE": "1"}
    proc = subprocess.run([sys.executable, "-c", ONE_STEP, str(_free_port())], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    for name in ("adam", "adamw"):
        for ddp, ds in zip(out[name]["ddp"], out[name]["deepspeed"], strict=True):
            torch.testing.assert_close(torch.tensor(ds), torch.tensor(ddp), rtol=1e-5, atol=1e-6, msg=name)
    assert not torch.allclose(torch.tensor(out["adam"]["ddp"][0]), torch.tensor(out["adamw"]["ddp"][0]))
