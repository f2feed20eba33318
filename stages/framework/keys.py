"""Content-addressed cache keys.

key = sha256(stage name, stage code version, resolved stage config, upstream keys).

The code version is the stage's declared ``version`` plus a hash of the source files of
the modules it names in ``code_modules`` (default: its own module), so editing a stage
invalidates its cache without anyone remembering to bump a number. Upstream keys chain
the hashes, so a change anywhere invalidates exactly the stage and its descendants.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib
import inspect
import json
from functools import cache
from pathlib import Path
from typing import Any

from stages.config.schema import PipelineConfig

KEY_LENGTH = 20  # hex chars (80 bits): short directory names, collisions negligible


def config_value(cfg: PipelineConfig, dotted: str) -> Any:
    """The value at ``dotted`` (e.g. ``"data.corpus_stats"``) of the resolved config."""
    node: Any = cfg
    for part in dotted.split("."):
        if not hasattr(node, part):
            raise KeyError(f"config has no key {dotted!r} (missing {part!r})")
        node = getattr(node, part)
    return node


def _jsonable(value: Any) -> Any:
    if dataclasses.is_dataclass(value):
        return dataclasses.asdict(value)
    return value


@cache
def source_hash(module_name: str) -> str:
    """sha256 of a module's source file (a package hashes all of its ``.py`` files)."""
    module = importlib.import_module(module_name)
    digest = hashlib.sha256()
    path = inspect.getsourcefile(module)
    if path is None:
        raise ValueError(f"module {module_name!r} has no source file to hash")
    files = [Path(path)]
    if files[0].name == "__init__.py":
        files = sorted(files[0].parent.rglob("*.py"))
    for f in files:
        digest.update(f.read_bytes())
    return digest.hexdigest()


def code_version(stage_cls: type) -> str:
    modules = getattr(stage_cls, "code_modules", None) or (stage_cls.__module__,)
    hashes = [source_hash(m) for m in modules]
    return f"{stage_cls.version}:" + hashlib.sha256("".join(hashes).encode()).hexdigest()[:16]


def stage_sections(stage_cls: type, cfg: PipelineConfig) -> dict[str, Any]:
    """The config sections a stage declared, as typed objects (what the stage reads)."""
    return {k: config_value(cfg, k) for k in stage_cls.config_keys}


def stage_config(stage_cls: type, cfg: PipelineConfig) -> dict[str, Any]:
    """The config sections a stage declared, as plain JSON-able values (what is hashed)."""
    return {k: _jsonable(v) for k, v in stage_sections(stage_cls, cfg).items()}


def cache_key(stage_cls: type, cfg: PipelineConfig, upstream_keys: dict[str, str]) -> str:
    payload = {
        "stage": stage_cls.name,
        "code": code_version(stage_cls),
        "config": stage_config(stage_cls, cfg),
        "upstream": dict(sorted(upstream_keys.items())),
    }
    blob = json.dumps(payload, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:KEY_LENGTH]
