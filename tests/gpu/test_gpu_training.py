"""Training on one GPU through Ray Train, per backend and precision: the loss falls, the
model and batches are on the GPU, and the exported model reloads on the CPU to the logits
the worker saved (within bf16 tolerance). With ``device=cpu``: the same fits on the CPU,
the workers under the device guard."""

from __future__ import annotations

import pytest
import torch

from stages.config import load_config
from stages.training.launch import fit
from stages.training.loop import PROBE_FILE
from tests.training import conftest as training_fixtures
from tests.training.conftest import TINY
from tests.training.test_train_nugget import _task
from tests.training.test_train_nugget2d import lm_artifacts  # noqa: F401  (module fixture)

# the training fixtures live here, not in tests/gpu/conftest.py: the tests of that folder that
# need no Ray must import without the pipeline's packages (the lent GPU image lacks them)
mt_artifacts = training_fixtures.mt_artifacts

pytestmark = [pytest.mark.ray]

CASES = [("ddp", "fp32", 1e-3), ("ddp", "bf16", 5e-2), ("deepspeed", "bf16", 5e-2)]


@pytest.mark.parametrize(("backend", "precision", "tolerance"), CASES)
def test_nugget_trains_on_one_gpu(ray_local, mt_artifacts, tmp_path, backend, precision, tolerance, device):
    from nugget_core import NuggetModel

    data, tok = mt_artifacts
    cfg = load_config([*TINY, "train.nugget.num_workers=1", f"train.nugget.use_gpu={str(device == 'cuda').lower()}",
                       f"train.nugget.backend={backend}", f"train.nugget.precision={precision}",
                       "train.nugget.max_grad_norm=1.0"])
    checkpoint, state = fit(_task(cfg, data, tok), cfg.train.nugget, str(tmp_path), backend, seed=0,
                            download_to=tmp_path / "final")
    losses = state["losses"]
    assert len(losses) == 20 and sum(losses[-5:]) / 5 < 0.95 * sum(losses[:5]) / 5
    probe_logits = torch.load(checkpoint / PROBE_FILE)
    assert probe_logits.device.type == "cpu"  # saved for CPU readers
    task = _task(cfg, data, tok)
    probe = task.collate(task.load_split("dev")[:8], step=-1, rank=0, train=False)
    model = NuggetModel.from_pretrained(checkpoint / "model").float().eval()
    with torch.no_grad():
        reloaded = task.logits(model, probe)
    torch.testing.assert_close(reloaded.float(), probe_logits.float(), atol=tolerance, rtol=tolerance)
    if backend == "deepspeed":
        assert list((checkpoint / "ds").glob("*optim_states.pt"))


def test_nugget2d_trains_on_one_gpu_in_bf16(ray_local, lm_artifacts, tmp_path, device):  # noqa: F811
    """The Nugget2D compressor objective (peft adapters, float masks, the scorer residual)
    under DDP bf16 autocast on a GPU; the export reloads on the CPU."""
    from nugget_core.nugget2d import load_nugget2d
    from stages.nugget2d.artifacts import LMRecords
    from stages.nugget2d.nugget2d_task import CompressorModule, Nugget2DCompressorTask

    base, data = lm_artifacts
    job = "train.nugget2d"
    cfg = load_config(["nugget2d.ratio=0.25", "nugget2d.scorer_layer=1", "nugget2d.lora_rank=4",
                       "nugget2d.recent_window=6", f"{job}.num_workers=1", f"{job}.use_gpu={str(device == 'cuda').lower()}",
                       f"{job}.precision=bf16", f"{job}.max_grad_norm=1.0", f"{job}.max_steps=12",
                       f"{job}.batch_size=4", f"{job}.lr=5e-3", f"{job}.eval_every=12",
                       f"{job}.checkpoint_every=12", f"{job}.warmup_steps=0"])
    task = Nugget2DCompressorTask(LMRecords(data), str(base), cfg.nugget2d, objective="continuation", seed=0)
    checkpoint, state = fit(task, cfg.train.nugget2d, str(tmp_path), "n2d-gpu", seed=0,
                            download_to=tmp_path / "final")
    losses = state["losses"]
    assert len(losses) == 12 and sum(losses[-3:]) < sum(losses[:3])
    model = CompressorModule(load_nugget2d(checkpoint / "model", base), "continuation").eval()
    probe = task.collate(task.load_split("dev")[:4], step=-1, rank=0, train=False)
    with torch.no_grad():
        torch.testing.assert_close(task.logits(model, probe).float(), torch.load(checkpoint / PROBE_FILE).float(),
                                   atol=5e-2, rtol=5e-2)
