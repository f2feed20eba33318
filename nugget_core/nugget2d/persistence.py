"""Save / load a Nugget2D model: peft adapters (peft's own format), scorer + soft
prompt (safetensors) and the config (JSON). The base LM is not saved: it is given again
at load time (a folder or a loaded model), as with peft.

Layout of ``directory``::

    nugget2d_config.json
    nugget2d_parts.safetensors     scorer.* and soft_prompt
    adapters/compressor/           adapter_config.json + adapter_model.safetensors (phi)
    adapters/decoder/              (theta)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from peft import PeftModel
from safetensors.torch import load_file, save_file
from transformers import AutoModelForCausalLM, PreTrainedModel

from .adapters import activate_both
from .config import COMPRESSOR, DECODER, Nugget2DConfig
from .model import Nugget2DModel

PARTS_NAME = "nugget2d_parts.safetensors"
ADAPTERS_DIR = "adapters"


def save_nugget2d(model: Nugget2DModel, directory: str | Path) -> Path:
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    model.config.save(directory)
    tensors = {f"scorer.{k}": v.detach().contiguous() for k, v in model.scorer.state_dict().items()}
    tensors["soft_prompt"] = model.soft_prompt.detach().contiguous()
    save_file(tensors, str(directory / PARTS_NAME))
    for name in (COMPRESSOR, DECODER):
        # peft writes non-"default" adapters to <dir>/<name>/.
        model.peft.save_pretrained(str(directory / ADAPTERS_DIR), selected_adapters=[name])
    return directory


def load_nugget2d(
    directory: str | Path, base_model: PreTrainedModel | str | Path, **hf_kwargs: Any
) -> Nugget2DModel:
    """Rebuild a saved model on ``base_model`` (a loaded LM, or a folder to load)."""
    directory = Path(directory)
    if not isinstance(base_model, PreTrainedModel):
        base_model = AutoModelForCausalLM.from_pretrained(str(base_model), **hf_kwargs)
    config = Nugget2DConfig.load(directory)
    adapters = directory / ADAPTERS_DIR
    peft_model = PeftModel.from_pretrained(
        base_model, str(adapters / COMPRESSOR), adapter_name=COMPRESSOR, is_trainable=True
    )
    peft_model.load_adapter(str(adapters / DECODER), adapter_name=DECODER, is_trainable=True)
    activate_both(peft_model)
    model = Nugget2DModel(base_model, config, peft_model=peft_model)
    parts = load_file(str(directory / PARTS_NAME))
    with torch.no_grad():
        model.soft_prompt.copy_(parts.pop("soft_prompt"))
    model.scorer.load_state_dict({k.removeprefix("scorer."): v for k, v in parts.items()})
    return model


def load_scorer(model: Nugget2DModel, directory: str | Path) -> None:
    """Copy the scorer of the model saved in ``directory`` into ``model`` (the paper's
    autoregressive model reuses the compressor's scorer). The saved config must agree on
    what the scorer reads (layer l and its window), or its scores would mean something else."""
    directory = Path(directory)
    saved = Nugget2DConfig.load(directory)
    for field in ("scorer_layer", "scorer_context"):
        if getattr(saved, field) != getattr(model.config, field):
            raise ValueError(
                f"scorer of {directory} was trained with {field}={getattr(saved, field)!r}, "
                f"this model has {field}={getattr(model.config, field)!r}"
            )
    parts = load_file(str(directory / PARTS_NAME))
    with torch.no_grad():
        model.scorer.load_state_dict(
            {k.removeprefix("scorer."): v for k, v in parts.items() if k.startswith("scorer.")}
        )
