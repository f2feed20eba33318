"""What every ``nugget`` subcommand shares: its one-line error (`CommandError`, printed as
``error: message`` with an exit code of `pipelines.cli`), the config it reads and the
completed stage outputs it finds for that config (`stage_output`)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from pipelines.cli import EXIT_CONFIG, EXIT_MISSING, default_dag
from stages.config import ConfigError, PipelineConfig, load_config
from stages.framework.dag import MissingInputError
from stages.framework.store import ArtifactStore

if TYPE_CHECKING:
    from stages.framework.dag import Dag


class CommandError(Exception):
    """A failure the command reports as ``error: message`` with exit ``code``."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


def load(overrides: Sequence[str]) -> PipelineConfig:
    """The resolved config with ``overrides`` (key=value); a bad one is exit 2."""
    bad = [v for v in overrides if "=" not in v]
    if bad:
        raise CommandError(EXIT_CONFIG, f"config overrides are key=value, got {bad}")
    try:
        return load_config(list(overrides))
    except ConfigError as exc:
        raise CommandError(EXIT_CONFIG, f"config: {exc}") from exc


def stage_output(cfg: PipelineConfig, stage: str, dag: Dag | None = None) -> Path:
    """The local folder of ``stage``'s completed output for ``cfg`` (its cache key, as the
    pipeline plans it); exit 3 naming the command that produces it when there is none."""
    store = ArtifactStore(cfg.run.artifact_root)
    try:
        plan = (dag or default_dag()).plan(cfg, store, targets=[stage])
    except MissingInputError as exc:
        raise CommandError(EXIT_MISSING, str(exc)) from None
    planned = next(p for p in plan if p.name == stage)
    if not planned.hit:
        raise CommandError(EXIT_MISSING, f"stage {stage!r} has no output for this config (key {planned.key}) "
                           f"under {store.root_uri}; produce it with: nugget run run.targets=[{stage}]")
    return store.artifact(stage, planned.key).path
