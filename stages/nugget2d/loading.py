"""Loading a model folder for evaluation outside the pipeline (``nugget eval``, ``nugget
generate``, the lm-evaluation-harness model): a Nugget2D model folder, or, for the
training-free systems that only need the base LM, a plain HF causal-LM folder."""

from __future__ import annotations

from pathlib import Path
from typing import Any

#: lm-evaluation-harness / HF dtype names -> `stages.common.device.PRECISIONS` names
DTYPES = {"float32": "fp32", "bfloat16": "bf16", "float16": "fp16"}


def load_nugget2d(checkpoint: Path, base_model: str | None, device: str,
                  base_within: str | None = None, dtype: str = "float32") -> tuple[Any, Any]:
    """The Nugget2D model in ``checkpoint`` (on ``base_model``, else the base LM its folder
    records, followed inside ``base_within``) in eval mode on ``device`` in ``dtype``, and its
    tokenizer (the folder's, else the base LM's)."""
    from transformers import AutoTokenizer

    from nugget_core.nugget2d import load_nugget2d as load
    from stages.common.device import place_model

    precision = _precision(dtype)
    model = load(checkpoint, base_model, base_within=base_within).eval()
    has_own = (Path(checkpoint) / "tokenizer_config.json").is_file()
    tokenizer = AutoTokenizer.from_pretrained(str(checkpoint) if has_own else base_model or model.lm.name_or_path,
                                              trust_remote_code=False)
    return place_model(model, device, precision), tokenizer


def is_nugget2d_folder(folder: Path) -> bool:
    from nugget_core.nugget2d.config import CONFIG_NAME

    return (folder / CONFIG_NAME).is_file()


def load_model_folder(checkpoint: Path, base_model: str | None, device: str,
                      base_within: str | None = None, dtype: str = "float32") -> tuple[Any, Any, bool]:
    """``(model, tokenizer, trained)``: a Nugget2D folder as `load_nugget2d` (``trained``
    True), or a plain HF causal-LM folder wrapped in a `Nugget2DModel` with fresh parts
    (``trained`` False: its adapters and scorer are untrained, so only the systems that
    decode with the base LM may use it)."""
    from transformers import AutoTokenizer

    from nugget_core.nugget2d import Nugget2DConfig, Nugget2DModel
    from stages.common.device import place_model

    folder = Path(checkpoint)
    if not folder.is_dir():
        raise ValueError(f"checkpoint: {checkpoint} is not a folder")
    if is_nugget2d_folder(folder):
        model, tokenizer = load_nugget2d(folder, base_model, device, base_within, dtype)
        return model, tokenizer, True
    if not (folder / "config.json").is_file():
        raise ValueError(f"checkpoint: {checkpoint} is neither a Nugget2D model folder (nugget2d_config.json) "
                         "nor an HF model folder (config.json)")
    if base_model is not None:
        raise ValueError(f"base_model: {checkpoint} is a plain HF model folder, which is its own base LM; "
                         "pass base_model only with a Nugget2D folder")
    precision = _precision(dtype)
    # scorer layer 0 (embeddings): the base-LM systems never score, and any depth has layer 0
    model = Nugget2DModel.from_lm(folder, Nugget2DConfig(scorer_layer=0)).eval()
    tokenizer = AutoTokenizer.from_pretrained(str(folder), trust_remote_code=False)
    return place_model(model, device, precision), tokenizer, False


def _precision(dtype: str) -> str:
    if dtype not in DTYPES:
        raise ValueError(f"dtype: value {dtype!r} is not one of {sorted(DTYPES)}")
    return DTYPES[dtype]
