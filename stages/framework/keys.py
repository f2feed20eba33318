"""Content-addressed cache keys.

key = sha256(stage name, stage code version, resolved stage config, upstream keys,
             fingerprints of the external inputs the stage reads by path).

The code version of a stage is ``"<version>:<digest>"``: its declared ``version`` plus the
first 16 hex chars of a sha256 over the import closure of the stage class's module
(``stage_cls.__module__``), as computed by :mod:`stages.framework.provenance`: every
in-repo module (packages ``stages``, ``nugget_core``, ``pipelines`` under the repo root)
that it transitively imports, read from the source with ``ast`` (lazy imports in function
bodies and ``TYPE_CHECKING`` blocks included), plus the ``__init__.py`` of every package
on the way. For each file, in sorted order of its path relative to the root, the digest
takes that path, the file's length and its bytes. Third-party modules are not hashed (the
environment pins them). Editing anything a stage can run invalidates its cache without
anyone bumping a number, and an edit outside its closure leaves it alone. Digests are
cached per process. Upstream keys chain the hashes, so a change anywhere invalidates
exactly the stage and its descendants.

External inputs (files, folders, globs and local models named by config fields, and the
offline sources under ``run.sources_dir``) enter as fingerprints of their content, not
their path (:mod:`stages.framework.external`), so a file replaced at the same path is a
miss. A stage without external inputs has the same payload as before they existed.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from functools import cache
from pathlib import Path
from typing import Any

from stages.config.schema import PipelineConfig
from stages.framework.external import external_fingerprints
from stages.framework.provenance import closure_files, repo_root

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


def closure_digest(module_name: str) -> str:
    """sha256 over (relative path, bytes) of each file in ``module_name``'s import closure."""
    return _closure_digest(module_name, repo_root(module_name))


@cache
def _closure_digest(module_name: str, root: Path) -> str:
    digest = hashlib.sha256()
    for rel in closure_files(module_name, root):
        data = (root / rel).read_bytes()
        digest.update(f"{rel.as_posix()}\0{len(data)}\0".encode())
        digest.update(data)
    return digest.hexdigest()


def code_version(stage_cls: type) -> str:
    """``"<version>:<16 hex of closure_digest(stage module)>"`` (see the module docstring)."""
    return f"{stage_cls.version}:" + closure_digest(stage_cls.__module__)[:16]


def stage_sections(stage_cls: type, cfg: PipelineConfig) -> dict[str, Any]:
    """The config sections a stage declared, as typed objects (what the stage reads)."""
    return {k: config_value(cfg, k) for k in stage_cls.config_keys}


def stage_config(stage_cls: type, cfg: PipelineConfig) -> dict[str, Any]:
    """The config sections a stage declared, as plain JSON-able values (what is hashed)."""
    return {k: _jsonable(v) for k, v in stage_sections(stage_cls, cfg).items()}


def external_inputs(stage_cls: type, cfg: PipelineConfig) -> dict[str, str]:
    """Fingerprints of what the stage reads by path (`stages.framework.external`); raises
    `stages.framework.external.ExternalInputError` for a declared path that is not there."""
    sources_dir = Path(os.path.expanduser(cfg.run.sources_dir))  # as the executor hands it to stages
    return external_fingerprints(stage_cls, stage_sections(stage_cls, cfg), sources_dir)


def cache_key(stage_cls: type, cfg: PipelineConfig, upstream_keys: dict[str, str]) -> str:
    payload: dict[str, Any] = {
        "stage": stage_cls.name,
        "code": code_version(stage_cls),
        "config": stage_config(stage_cls, cfg),
        "upstream": dict(sorted(upstream_keys.items())),
    }
    external = external_inputs(stage_cls, cfg)
    if external:  # absent for stages that read nothing by path: their keys are unchanged
        payload["external"] = external
    blob = json.dumps(payload, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:KEY_LENGTH]
