"""DeepSpeed resumes read checkpoints weights-only (`stages.training.deepspeed_checkpoints`):
a real ZeRO-2 save / load round trip on CPU continues exactly, every ``torch.load`` of it
is weights-only, and a file carrying a pickled callable is refused before it runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from stages.training.deepspeed_checkpoints import UnsafeCheckpointError, load_weights_only

REPO = Path(__file__).resolve().parents[2]


class _Payload:
    """Unpickling it creates the file ``marker``: the effect of an arbitrary callable."""

    def __init__(self, marker: Path) -> None:
        self.marker = str(marker)

    def __reduce__(self):
        return (open, (self.marker, "w"))


def test_a_pickled_callable_is_refused_and_never_runs(tmp_path):
    marker = tmp_path / "payload-ran"
    path = tmp_path / "optim_states.pt"
    torch.save({"state": torch.ones(2), "extra": _Payload(marker)}, path)
    with pytest.raises(UnsafeCheckpointError, match=f"refusing to resume from {path}: .*Unsupported global: GLOBAL io.open"):
        load_weights_only(path, allowed=())
    assert not marker.exists()
    torch.load(path, weights_only=False)  # what DeepSpeed's own reader does: it runs
    assert marker.exists()


ROUND_TRIP = r"""
import json, os, sys
from pathlib import Path
from types import SimpleNamespace

os.environ.update(DS_ACCELERATOR="cpu", RANK="0", WORLD_SIZE="1", LOCAL_RANK="0", MASTER_ADDR="127.0.0.1")
import torch
import torch.distributed as dist

weights_only = []
real_load = torch.load
def spy(*args, **kwargs):
    weights_only.append(kwargs.get("weights_only"))
    return real_load(*args, **kwargs)
torch.load = spy
dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{sys.argv[2]}", rank=0, world_size=1)

from stages.training.deepspeed_checkpoints import UnsafeCheckpointError
from stages.training.engine import DeepSpeedEngine

job = SimpleNamespace(batch_size=2, grad_accum=1, precision="bf16", max_grad_norm=1.0, lr=1e-2,
                      betas=(0.9, 0.999), weight_decay=0.0, optimizer="adam")
loss = lambda module, batch: module(batch["x"]).float().pow(2).mean()
batch = lambda: {"x": torch.randn(2, 4, dtype=torch.bfloat16)}
torch.manual_seed(0)
first = DeepSpeedEngine(torch.nn.Linear(4, 3), job, torch.device("cpu"))
for _ in range(3):
    first.train_step([batch()], job.lr, loss)
folder = Path(sys.argv[1])
first.save(folder, 0)
torch.manual_seed(1)  # other initial weights: the load must replace them
resumed = DeepSpeedEngine(torch.nn.Linear(4, 3), job, torch.device("cpu"))
resumed.load(folder)
same = all(torch.equal(a, b) for a, b in zip(first.module.parameters(), resumed.module.parameters()))
x = batch()  # one more step each: equal only if the Adam moments were restored too
steps = [first.train_step([x], job.lr, loss), resumed.train_step([x], job.lr, loss)]

shard = next((folder / "ds").glob("*optim_states.pt"))
state = real_load(shard, weights_only=False)
marker = folder / "payload-ran"
state["extra"] = type("P", (), {"__reduce__": lambda self: (open, (str(marker), "w"))})()
torch.save(state, shard)
try:
    resumed.load(folder)  # a resume from the tampered checkpoint
    refused = ""
except UnsafeCheckpointError as exc:
    refused = str(exc)
print(json.dumps({"same": same, "steps": steps, "weights_only": weights_only, "refused": refused,
                  "payload_ran": marker.exists()}))
"""


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_deepspeed_zero2_resume_is_weights_only_and_exact(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(REPO), "PYTHONDONTWRITEBYTECODE": "1"}
    proc = subprocess.run([sys.executable, "-c", ROUND_TRIP, str(tmp_path / "ckpt"), str(_free_port())],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["same"] and out["steps"][0] == out["steps"][1]
    # model states and the optimiser shard on the resume, then the refused file
    assert out["weights_only"] and set(out["weights_only"]) == {True} and len(out["weights_only"]) >= 3
    assert "refusing to resume from" in out["refused"] and "optim_states.pt" in out["refused"]
    assert not out["payload_ran"]
