"""The machine a call ran on (``env.json``): GPU, driver, Python and library versions, and the
commit it ran (the carry's manifest says which one was packed: the device's copy of the
working tree has no git history)."""

from __future__ import annotations

import importlib.metadata as md
import json
import platform
import shutil
import subprocess
import sys
from pathlib import Path

LIBRARIES = ("torch", "transformers", "peft", "sacrebleu", "scipy", "gguf", "ray", "mlflow", "deepspeed", "omegaconf",
             "datasets")
REPO = Path(__file__).resolve().parents[2]


def packed_commit(repo: Path = REPO) -> str | None:
    """The commit the carries were packed at, else the checkout's HEAD, else None."""
    for manifest in sorted(repo.glob(".gpu-check/carry*/manifest.json")):
        try:
            return str(json.loads(manifest.read_text())["commit"])
        except (OSError, ValueError, KeyError):
            continue
    out = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True)
    return out.stdout.strip() or None


def gpu_info(out: Path, device: str = "cuda") -> int:
    """Write env.json; rc 1 when ``device`` is cuda and torch sees none (a lent machine without
    its GPU), 0 otherwise (the CPU rehearsal names ``cpu``)."""
    import torch

    info: dict[str, object] = {"commit": packed_commit(), "python": sys.version.split()[0],
                               "platform": platform.platform(),
                               "cuda_available": torch.cuda.is_available(), "torch_cuda": torch.version.cuda}
    for lib in LIBRARIES:
        try:
            info[lib] = md.version(lib)
        except md.PackageNotFoundError:
            info[lib] = None
    if torch.cuda.is_available():
        props = torch.cuda.get_device_properties(0)
        info.update(device_name=props.name, device_count=torch.cuda.device_count(),
                    memory_gib=round(props.total_memory / 2**30, 1), capability=f"{props.major}.{props.minor}")
    if shutil.which("nvidia-smi"):
        info["nvidia_smi"] = subprocess.run(["nvidia-smi"], capture_output=True, text=True, timeout=30).stdout
    out.mkdir(parents=True, exist_ok=True)
    (out / "env.json").write_text(json.dumps(info, indent=2) + "\n")
    print(json.dumps({k: v for k, v in info.items() if k != "nvidia_smi"}, indent=2))
    return 0 if info["cuda_available"] or device == "cpu" else 1
