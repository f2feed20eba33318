"""What makes a saved model folder travel: the base-model reference of adapter-only
checkpoints, and the errors that name the right folder when a user points at the wrong one.

An adapter checkpoint (Nugget2D, ICAE) holds no base LM weights. Recording the base as the
absolute path it was trained from breaks on any other machine, so `BaseModelReference`
records it two ways:

- ``relative_path``: the base folder relative to the checkpoint folder. The pipeline's
  artifact root keeps every stage's output under one root, so a root copied or mounted
  elsewhere keeps these paths valid.
- ``hub_id``: the Hugging Face hub name, when the base came from the hub (empty for a
  model built or converted locally, which no hub holds).

`resolve` tries them in that order and otherwise says what it looked for.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from .config_io import JsonConfig
from .remote_code import refuse_remote_code

if TYPE_CHECKING:
    from transformers import PreTrainedModel

BASE_MODEL_FILE = "base_model.json"
T = TypeVar("T")


@dataclass(frozen=True)
class BaseModelReference(JsonConfig):
    """Where the base LM of an adapter checkpoint is found (see the module docstring)."""

    file_name: ClassVar[str] = BASE_MODEL_FILE
    relative_path: str = ""
    hub_id: str = ""
    description: str = ""  # what the base is, for people (model card, errors)

    @classmethod
    def of(cls, base_dir: str | Path, checkpoint_dir: str | Path, hub_id: str = "",
           description: str = "") -> BaseModelReference:
        """The reference to ``base_dir`` (a local folder) from ``checkpoint_dir``."""
        relative = os.path.relpath(Path(base_dir).resolve(), Path(checkpoint_dir).resolve())
        return cls(relative_path=Path(relative).as_posix(), hub_id=hub_id, description=description)

    def resolve(self, checkpoint_dir: str | Path, within: str | Path | None = None) -> str:
        """A folder or hub name ``from_pretrained`` can load: the relative path when that
        folder exists, else the hub name; a `FileNotFoundError` naming both otherwise.

        The relative path is followed only inside ``within`` (default: the checkpoint
        folder itself), so a checkpoint from elsewhere cannot point its loader at any
        folder of this machine; a pipeline checkpoint's base lies beside it in the artifact
        root, which the caller passes (a `ValueError` says so)."""
        if self.relative_path:
            bound = Path(within if within is not None else checkpoint_dir).resolve()
            local = (Path(checkpoint_dir) / self.relative_path).resolve()
            if not local.is_relative_to(bound):
                raise ValueError(
                    f"{Path(checkpoint_dir) / BASE_MODEL_FILE}: the base model path {self.relative_path!r} leads "
                    f"outside {bound}, which is not followed; pass base_within= (a folder you trust to hold the "
                    "base, e.g. the artifact root the checkpoint came from) or base_model= (the base LM itself)"
                )
            if local.is_dir():
                return str(local)
        if self.hub_id:
            return self.hub_id
        raise FileNotFoundError(
            f"{Path(checkpoint_dir) / BASE_MODEL_FILE}: the base model "
            f"({self.description or 'no description'}) is not at {self.relative_path!r} relative to "
            f"{checkpoint_dir} and has no hub name; pass base_model= (the folder or hub name of that LM)"
        )


# What makes a folder loadable, checked before anything is built or injected: the loaders
# would otherwise fail inside safetensors ("incomplete metadata"), huggingface_hub ("Repo id
# must be in the form...", for a local folder it cannot find) or json, naming no path.
HF_WEIGHT_FILES = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin")
ADAPTER_CONFIG = "adapter_config.json"
ADAPTER_WEIGHT_FILES = ("adapter_model.safetensors", "adapter_model.bin")


def check_safetensors(path: str | Path) -> Path:
    """``path`` when it is a complete safetensors file (its header read, its size checked
    against the header: cheap); else an error naming it."""
    from safetensors import SafetensorError, safe_open

    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file")
    try:
        with safe_open(str(path), framework="pt"):
            pass
    except (SafetensorError, OSError) as exc:
        raise ValueError(f"{path}: not a complete safetensors file, truncated or corrupt ({exc})") from exc
    return path


def read_safetensors(path: str | Path) -> dict[str, Any]:
    """The tensors of ``path`` (`check_safetensors` first, so a broken file is named)."""
    from safetensors.torch import load_file

    return load_file(str(check_safetensors(path)))


def read_json_file(path: str | Path) -> Any:
    """The JSON content of ``path``; a missing file or bad JSON is named by its path."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path}: not valid JSON ({exc})") from exc


def load_json_config(cls: type[T], directory: str | Path) -> T:
    """``cls.load(directory)`` with the file named in any error (a `JsonConfig` subclass)."""
    path = Path(directory) / cls.file_name  # type: ignore[attr-defined]
    data = read_json_file(path)
    try:
        return cls.from_dict(data)  # type: ignore[attr-defined]
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{path}: {exc}") from exc


def check_hf_model_folder(directory: str | Path) -> Path:
    """``directory`` when it holds an HF model ``from_pretrained`` can read (``config.json``
    and weights, safetensors complete); else an error naming the folder or the file."""
    directory = Path(directory)
    read_json_file(directory / "config.json")
    present = [name for name in HF_WEIGHT_FILES if (directory / name).is_file()]
    if not present:
        raise FileNotFoundError(f"{directory}: no weights file ({', '.join(HF_WEIGHT_FILES)})")
    if present[0] == "model.safetensors":
        check_safetensors(directory / present[0])
    elif present[0] == "model.safetensors.index.json":
        index = read_json_file(directory / present[0])
        for shard in sorted(set(index.get("weight_map", {}).values())):
            check_safetensors(directory / shard)
    return directory


def check_adapter_folder(directory: str | Path) -> Path:
    """``directory`` when it holds a peft adapter (config and complete weights); else an
    error naming it. peft itself, given a local folder that is not there, asks the hub
    and answers "Repo id must be in the form..."."""
    directory = Path(directory)
    if not directory.is_dir():
        raise FileNotFoundError(f"{directory}: no such folder (a LoRA adapter of this model)")
    read_json_file(directory / ADAPTER_CONFIG)
    present = [name for name in ADAPTER_WEIGHT_FILES if (directory / name).is_file()]
    if not present:
        raise FileNotFoundError(f"{directory / ADAPTER_WEIGHT_FILES[0]}: no such file (the adapter's weights)")
    if present[0].endswith(".safetensors"):
        check_safetensors(directory / present[0])
    return directory


@contextmanager
def untouched_on_failure(model: Any) -> Iterator[None]:
    """Undo what a failing block did to the modules of ``model`` (a torch module the caller
    owns): submodules replaced (peft's LoRA injection wraps each target layer), their
    ``requires_grad`` flags, attributes added to the model. On success nothing is undone."""
    modules = list(model.named_modules(remove_duplicate=False))
    flags = [(p, p.requires_grad) for p in model.parameters()]
    attributes = set(vars(model))
    try:
        yield
    except BaseException:
        by_name = dict(modules)
        for name, module in modules:
            if name:
                parent, _, child = name.rpartition(".")
                by_name[parent]._modules[child] = module
        for param, flag in flags:
            param.requires_grad_(flag)
        for added in set(vars(model)) - attributes:
            delattr(model, added)
        raise


def require_model_folder(directory: str | Path, marker: str, kind: str) -> Path:
    """``directory`` when it holds ``marker`` (the file every ``kind`` folder has); else a
    `FileNotFoundError` that names the model folders below it, e.g. when given a pipeline
    stage's output instead of the model folder inside it."""
    directory = Path(directory)
    if (directory / marker).is_file():
        return directory
    if not directory.is_dir():
        raise FileNotFoundError(f"{directory}: no such folder (expected a model folder: {kind})")
    found = sorted(p.parent for p in directory.glob(f"**/{marker}"))
    article = "an" if kind[:1] in "AEIOU" else "a"
    hint = (f"; the {kind} model folder(s) inside it: {', '.join(str(p) for p in found[:6])}"
            + (f" and {len(found) - 6} more" if len(found) > 6 else "")) if found else ""
    raise FileNotFoundError(f"{directory} is not {article} {kind} model folder (it has no {marker}){hint}")


def rewrite_adapter_base(adapter_dirs: Sequence[Path], reference: BaseModelReference) -> None:
    """Point each peft ``adapter_config.json`` at the base's hub name, or at nothing: peft
    resolves a path there against the working directory, so the absolute training-machine
    path it wrote would load the wrong thing or fail elsewhere; `BASE_MODEL_FILE` holds the
    folder reference."""
    for adapter_dir in adapter_dirs:
        path = adapter_dir / "adapter_config.json"
        config = json.loads(path.read_text())
        config["base_model_name_or_path"] = reference.hub_id or None
        path.write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")


# A tensor added to a Nugget seq2seq checkpoint's HF weights. Its only job: a plain
# ``AutoModelForSeq2SeqLM.from_pretrained`` lists it as UNEXPECTED in transformers' load
# report (a warning), and its name tells the user that the decoder expects nuggets.
# `load_seq2seq_base` (what NuggetModel.from_pretrained uses) loads without it.
NUGGET_MARKER_KEY = "nugget_decoder_trained_on_nuggets.load_with_nugget_core_NuggetModel_from_pretrained"


def mark_nugget_seq2seq(directory: str | Path) -> None:
    """Add `NUGGET_MARKER_KEY` to the HF weights ``save_pretrained`` wrote in
    ``directory`` (one file, or the first shard of a sharded checkpoint)."""
    import torch
    from safetensors.torch import load_file, save_file

    directory = Path(directory)
    index = directory / "model.safetensors.index.json"
    if index.is_file():
        meta = json.loads(index.read_text())
        shard = sorted(set(meta["weight_map"].values()))[0]
        meta["weight_map"][NUGGET_MARKER_KEY] = shard
        index.write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n")
    else:
        shard = "model.safetensors"
    path = directory / shard
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no safetensors weights to mark (save with safe_serialization)")
    tensors = load_file(str(path))
    tensors[NUGGET_MARKER_KEY] = torch.ones(1, device="cpu")  # beside the loaded (host) weights
    save_file(tensors, str(path), metadata={"format": "pt"})


def load_seq2seq_base(directory: str | Path, **hf_kwargs: Any) -> PreTrainedModel:
    """``AutoModelForSeq2SeqLM.from_pretrained(directory)`` for a Nugget checkpoint, without
    the marker warning (the caller knows the decoder reads nuggets)."""
    from transformers import AutoConfig, AutoModelForSeq2SeqLM, PreTrainedModel
    from transformers.models.auto.modeling_auto import MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING

    config = AutoConfig.from_pretrained(str(directory), trust_remote_code=False)
    # transformers annotates every auto mapping's values as the tokenizer mappings' (slow,
    # fast) pair; a model mapping holds the model class, which the check below narrows to
    found: object = MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING.get(type(config), None)
    if not (isinstance(found, type) and issubclass(found, PreTrainedModel)):
        # an architecture Auto does not map: let it raise its own error
        return AutoModelForSeq2SeqLM.from_pretrained(str(directory), **refuse_remote_code(hf_kwargs))
    model_class = found
    saved = model_class.__dict__.get("_keys_to_ignore_on_load_unexpected")
    model_class._keys_to_ignore_on_load_unexpected = [
        *(model_class._keys_to_ignore_on_load_unexpected or []), re.escape(NUGGET_MARKER_KEY)]
    try:
        return model_class.from_pretrained(str(directory), **hf_kwargs)
    finally:
        if saved is None:
            del model_class._keys_to_ignore_on_load_unexpected
        else:
            model_class._keys_to_ignore_on_load_unexpected = saved
