"""Save / load a Nugget2D model: peft adapters (peft's own format), scorer + soft
prompt (safetensors) and the config (JSON, with the calibrated Lambda of an
autoregressive model). The base LM is not saved: the folder records where it is
(`nugget_core.checkpoint.BaseModelReference`: a path relative to the folder and / or a hub
name), or it is given again at load time (a folder or a loaded model), as with peft.

Layout of ``directory``::

    nugget2d_config.json
    nugget2d_parts.safetensors     scorer.* and soft_prompt
    adapters/compressor/           adapter_config.json + adapter_model.safetensors (phi)
    adapters/decoder/              (theta)
    base_model.json                where the base LM is (optional)
    usage.json                     how the model reads its inputs (optional, `Nugget2DUsage`)
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import torch
from peft import PeftModel
from safetensors.torch import load_file, save_file
from transformers import AutoModelForCausalLM, PreTrainedModel

from ..checkpoint import (
    BaseModelReference,
    check_adapter_folder,
    check_hf_model_folder,
    load_json_config,
    read_safetensors,
    require_model_folder,
    rewrite_adapter_base,
    untouched_on_failure,
)
from ..config_io import JsonConfig
from ..remote_code import refuse_remote_code
from .adapters import activate_both
from .config import COMPRESSOR, CONFIG_NAME, DECODER, Nugget2DConfig
from .model import Nugget2DModel

PARTS_NAME = "nugget2d_parts.safetensors"
ADAPTERS_DIR = "adapters"
USAGE_NAME = "usage.json"


@dataclass(frozen=True)
class Nugget2DUsage(JsonConfig):
    """How a trained model expects its inputs, which its weights cannot tell: the
    objective it was trained on, whether the decoder reads the soft prompt before the
    prompt (continuation / autoencoding models do, fine-tuned ones do not), and for
    fine-tuned models the task and the prompt format (``inst``: ``[INST] ... [/INST]``,
    or ``chat_template``: the base LM's chat template)."""

    file_name: ClassVar[str] = USAGE_NAME
    objective: str
    soft_prompt: bool
    finetune_task: str = ""
    prompt_format: str = ""


def save_nugget2d(
    model: Nugget2DModel, directory: str | Path, base_model: BaseModelReference | None = None,
    usage: Nugget2DUsage | None = None,
) -> Path:
    """Write ``model`` into ``directory`` (layout in the module docstring); ``base_model``:
    where its base LM is, so that `load_nugget2d` needs only the folder; ``usage``: how it
    reads its inputs (else ``model.usage``, when set)."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    model.config.save(directory)
    tensors = {f"scorer.{k}": v.detach().contiguous() for k, v in model.scorer.state_dict().items()}
    tensors["soft_prompt"] = model.soft_prompt.detach().contiguous()
    save_file(tensors, str(directory / PARTS_NAME))
    for name in (COMPRESSOR, DECODER):
        # peft writes non-"default" adapters to <dir>/<name>/.
        model.peft.save_pretrained(str(directory / ADAPTERS_DIR), selected_adapters=[name])
    usage = usage or model.usage
    if usage is not None:
        usage.save(directory)
    if base_model is not None:
        base_model.save(directory)
        rewrite_adapter_base([directory / ADAPTERS_DIR / n for n in (COMPRESSOR, DECODER)], base_model)
    return directory


def resolve_base_model(
    directory: str | Path, base_model: PreTrainedModel | str | Path | None, base_within: str | Path | None = None
) -> PreTrainedModel | str | Path:
    """``base_model`` when given, else the base LM ``directory`` records (a `ValueError`
    when it records none, or a path outside ``base_within``: `BaseModelReference.resolve`)."""
    if base_model is not None:
        return base_model
    reference = BaseModelReference.load_optional(directory)
    if reference is None:
        raise ValueError(f"{directory} records no base model (no base_model.json): pass base_model= "
                         "(the folder or hub name of the LM it was trained on)")
    return reference.resolve(directory, within=base_within)


def load_nugget2d(
    directory: str | Path, base_model: PreTrainedModel | str | Path | None = None,
    base_within: str | Path | None = None, **hf_kwargs: Any
) -> Nugget2DModel:
    """Rebuild a saved model on ``base_model`` (a loaded LM, or a folder / hub name to
    load; None: the base LM the folder records, followed only inside ``base_within``,
    default the folder itself: pass the artifact root for a pipeline checkpoint). A folder that is not a Nugget2D model
    folder (e.g. a pipeline stage's output) gets an error naming the ones inside it.

    Every file is checked before the base model is touched, and a given ``base_model`` is
    left as it was if the load fails after all (peft injects the LoRA layers into it)."""
    directory = require_model_folder(directory, CONFIG_NAME, "Nugget2D")
    config = load_json_config(Nugget2DConfig, directory)
    adapters = directory / ADAPTERS_DIR
    for name in (COMPRESSOR, DECODER):
        check_adapter_folder(adapters / name)
    parts = read_safetensors(directory / PARTS_NAME)
    usage = load_json_config(Nugget2DUsage, directory) if (directory / USAGE_NAME).is_file() else None
    base_model = resolve_base_model(directory, base_model, base_within)
    if not isinstance(base_model, PreTrainedModel):
        base_model = AutoModelForCausalLM.from_pretrained(str(check_hf_model_folder_or_hub(base_model)),
                                                          **refuse_remote_code(hf_kwargs))
    with untouched_on_failure(base_model):
        try:
            peft_model = PeftModel.from_pretrained(
                base_model, str(adapters / COMPRESSOR), adapter_name=COMPRESSOR, is_trainable=True
            )
            peft_model.load_adapter(str(adapters / DECODER), adapter_name=DECODER, is_trainable=True)
            activate_both(peft_model)
            model = Nugget2DModel(base_model, config, peft_model=peft_model)
            with torch.no_grad():
                model.soft_prompt.copy_(parts.pop("soft_prompt"))
            model.scorer.load_state_dict({k.removeprefix("scorer."): v for k, v in parts.items()})
        except (KeyError, RuntimeError, ValueError) as exc:  # shapes / depth / names of another base LM
            raise ValueError(f"{directory}: does not fit this base model: {exc}") from exc
    model.usage = usage
    return model


def check_hf_model_folder_or_hub(name_or_path: str | Path) -> str | Path:
    """A local base-model folder checked (`check_hf_model_folder`); a hub name as is."""
    return check_hf_model_folder(name_or_path) if Path(name_or_path).is_dir() else name_or_path


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
