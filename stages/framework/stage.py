"""The stage contract: what a DAG stage declares and what it is handed when it runs.

A stage is a class with class-level declarations and one method::

    class CorpusStats(Stage):
        name = "corpus_stats"
        upstream = ()                          # names of stages whose outputs it reads
        config_keys = ("data.corpus_stats",)   # config sections it reads (enter the cache key)
        version = "1"                          # bump for behaviour changes the source hash misses
        resources = {"num_cpus": 1}            # Ray resources of the task that runs `run`

        def run(self, ctx: StageContext) -> None:
            ...write files under ctx.output_dir, ctx.log_metrics({...})

``run`` executes inside a Ray task and may itself launch Ray tasks, Ray Data pipelines
or a Ray Train trainer (then declare ``resources = {"num_cpus": 0}`` so the
coordinating task does not hold the CPUs its workers need). It must be a pure function
of its declared config sections and its upstream artifacts: the framework caches its
output under a key derived from exactly those (see :mod:`stages.framework.keys`).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from stages.framework.tracking import RunLogger


@dataclass(frozen=True)
class Artifact:
    """A completed stage output. ``path`` is always a local directory to read from."""

    stage: str
    key: str
    uri: str
    path: Path
    manifest: dict[str, Any]

    def file(self, name: str) -> Path:
        """A file of the artifact; a clear error if the stage did not write it."""
        target = self.path / name
        if not target.exists():
            raise FileNotFoundError(
                f"artifact of stage {self.stage!r} (key {self.key}) has no {name!r} at {self.path}"
            )
        return target


@dataclass
class StageContext:
    """What a running stage sees: its config sections, inputs, output dir and logger."""

    stage: str
    key: str
    config: dict[str, Any]
    inputs: dict[str, Artifact]
    output_dir: Path
    logger: RunLogger
    sources_dir: Path
    work_uri: str  # durable scratch for this (stage, key) beyond one attempt, e.g. Ray Train storage
    forced: bool = False
    metrics: dict[str, float] = field(default_factory=dict)

    def cfg(self, dotted: str) -> Any:
        """The declared config section ``dotted`` (e.g. ``"data.corpus_stats"``)."""
        if dotted not in self.config:
            raise KeyError(
                f"stage {self.stage!r} reads config {dotted!r} but does not declare it in "
                f"config_keys {sorted(self.config)}; declare it so it enters the cache key"
            )
        return self.config[dotted]

    def log_metrics(self, metrics: dict[str, float], step: int | None = None) -> None:
        """Log to this stage's MLflow run. Final (step-less) values also go to the manifest."""
        clean = {k: float(v) for k, v in metrics.items()}
        bad = [k for k, v in clean.items() if not math.isfinite(v)]
        if bad:
            raise ValueError(f"stage {self.stage!r} reported non-finite metrics: {bad}")
        self.logger.log_metrics(clean, step=step)
        if step is None:
            self.metrics.update(clean)

    def log_artifact(self, path: Path) -> None:
        """Copy a (small) file of the output into the MLflow run's artifacts."""
        self.logger.log_artifact(path)

    def write_json(self, name: str, obj: Any) -> Path:
        target = self.output_dir / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False) + "\n")
        return target


class Stage:
    """Base class of a DAG stage; see the module docstring for the contract."""

    name: ClassVar[str]
    upstream: ClassVar[tuple[str, ...]] = ()
    config_keys: ClassVar[tuple[str, ...]] = ()
    version: ClassVar[str] = "1"
    resources: ClassVar[dict[str, float]] = {"num_cpus": 1}
    description: ClassVar[str] = ""

    def run(self, ctx: StageContext) -> None:  # pragma: no cover - abstract
        raise NotImplementedError
