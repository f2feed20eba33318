"""Content-addressed cache keys, and the parts they are made of.

key = sha256 of the stage's :class:`KeyParts`:

- ``stage``: its name;
- ``code``: its code version, ``"<version>:<digest>"``: the hand-bumped ``version`` plus a
  digest of the normalised source (the AST without docstrings; comments never reach it) of
  every file of its import closure (:mod:`stages.framework.code_identity`,
  :mod:`stages.framework.provenance`). A comment or docstring edit keys nothing anew; a
  code edit re-keys exactly the stages whose closure holds the file;
- ``framework``: ``FRAMEWORK_OUTPUT_VERSION``. The framework's plumbing (scheduling, the
  store, locks, MLflow tagging) is outside every closure, so editing it re-keys nothing; the
  rare change to *what a stage writes* through it (the manifest's meaning, the layout of an
  output) is versioned by hand here, and bumping it re-keys every stage;
- ``config``: the resolved config sections it declares (``config_keys``);
- ``upstream``: the keys of the stages it reads, so a change anywhere re-keys the stage and
  its descendants;
- ``external``: fingerprints of what it reads by path (files, folders, local models, the
  offline sources; :mod:`stages.framework.external`): content, not path; absent for a stage
  that reads nothing by path;
- ``environment``: the versions of the libraries its closure runs, with Python, CUDA and
  cuDNN (:mod:`stages.framework.environment`): an artifact made under other versions is a
  miss.

The parts are recorded in every output's manifest (``key_parts``), so a miss can be
explained against the outputs already in the store (:mod:`stages.framework.miss_reasons`),
and a code change a user chooses to keep can be accepted on purpose
(:mod:`stages.framework.code_pins`): the stage's code part then stays the accepted one.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from stages.config.schema import PipelineConfig
from stages.framework.code_identity import code_version
from stages.framework.environment import stage_environment
from stages.framework.external import external_fingerprints

if TYPE_CHECKING:
    from stages.framework.stage import Stage

KEY_LENGTH = 20  # hex chars (80 bits): short directory names, collisions negligible
# bump by hand when the framework changes what a stage's output holds or means (see above)
FRAMEWORK_OUTPUT_VERSION = "1"


def config_value(cfg: PipelineConfig, dotted: str) -> Any:
    """The value at ``dotted`` (e.g. ``"data.corpus_stats"``) of the resolved config."""
    node: Any = cfg
    for part in dotted.split("."):
        if not hasattr(node, part):
            raise KeyError(f"config has no key {dotted!r} (missing {part!r})")
        node = getattr(node, part)
    return node


def _jsonable(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):  # a section, not its class
        return dataclasses.asdict(value)
    return value


def stage_sections(stage_cls: type[Stage], cfg: PipelineConfig) -> dict[str, Any]:
    """The config sections a stage declared, as typed objects (what the stage reads)."""
    return {k: config_value(cfg, k) for k in stage_cls.config_keys}


def stage_config(stage_cls: type[Stage], cfg: PipelineConfig) -> dict[str, Any]:
    """The config sections a stage declared, as plain JSON-able values (what is hashed)."""
    return {k: _jsonable(v) for k, v in stage_sections(stage_cls, cfg).items()}


def external_inputs(stage_cls: type[Stage], cfg: PipelineConfig) -> dict[str, str]:
    """Fingerprints of what the stage reads by path (`stages.framework.external`); raises
    `stages.framework.external.ExternalInputError` for a declared path that is not there."""
    sources_dir = Path(os.path.expanduser(cfg.run.sources_dir))  # as the executor hands it to stages
    return external_fingerprints(stage_cls, stage_sections(stage_cls, cfg), sources_dir)


@dataclass(frozen=True)
class KeyParts:
    """Everything a stage's cache key is made of (see the module docstring)."""

    stage: str
    code: str
    config: dict[str, Any]
    upstream: dict[str, str]
    environment: dict[str, str]
    external: dict[str, str] = field(default_factory=dict)
    framework: str = FRAMEWORK_OUTPUT_VERSION

    def key(self) -> str:
        payload: dict[str, Any] = {
            "stage": self.stage,
            "code": self.code,
            "framework": self.framework,
            "config": self.config,
            "upstream": dict(sorted(self.upstream.items())),
            "environment": dict(sorted(self.environment.items())),
        }
        if self.external:  # absent for stages that read nothing by path
            payload["external"] = self.external
        blob = json.dumps(payload, sort_keys=True, separators=(",", ":"), default=str)
        return hashlib.sha256(blob.encode()).hexdigest()[:KEY_LENGTH]

    def record(self) -> dict[str, Any]:
        """The parts as the manifest stores them (plain JSON)."""
        return json.loads(json.dumps(dataclasses.asdict(self), sort_keys=True, default=str))


def key_parts(stage_cls: type[Stage], cfg: PipelineConfig, upstream_keys: dict[str, str],
              code: str | None = None) -> KeyParts:
    """The parts of ``stage_cls``'s key under ``cfg`` and its upstream keys; ``code``
    replaces its code version (an accepted code change, `stages.framework.code_pins`)."""
    return KeyParts(
        stage=stage_cls.name,
        code=code or code_version(stage_cls),
        config=stage_config(stage_cls, cfg),
        upstream=dict(sorted(upstream_keys.items())),
        environment=stage_environment(stage_cls),
        external=external_inputs(stage_cls, cfg),
    )


def cache_key(stage_cls: type[Stage], cfg: PipelineConfig, upstream_keys: dict[str, str]) -> str:
    """The cache key of ``stage_cls`` under ``cfg`` and its upstream keys."""
    return key_parts(stage_cls, cfg, upstream_keys).key()
