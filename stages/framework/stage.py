"""The stage contract: what a DAG stage declares and what it is handed when it runs.

A stage is a class whose header is its contract: the config it reads, the upstream
outputs it reads and the output it writes (:mod:`stages.framework.contract`)::

    @dataclass(frozen=True)
    class StatsConfig:
        stats: CorpusStatsSection = section("data.corpus_stats")

    @dataclass(frozen=True)
    class StatsInputs:
        docs: MtDocuments                      # the output of MtDocuments.STAGE

    class CorpusStats(Stage[StatsConfig, StatsInputs, CorpusStatistics]):
        name = "corpus_stats"
        version = "1"                          # bump for behaviour changes the code hash misses
        resources = {"num_cpus": 1}            # Ray resources of the task that runs it

        def compute(self, ctx: StageContext, cfg: StatsConfig, inputs: StatsInputs) -> None:
            ...write files under ctx.output_dir, ctx.log_metrics({...})

``upstream`` (the stages whose outputs it reads) and ``config_keys`` (the config sections
that enter its cache key) are derived from the header; ``compute`` gets the sections as
the config class and each input read through its contract class, and the output is read
back through its class before it is published. A stage without type arguments (``class
X(Stage)``) still declares ``upstream`` and ``config_keys`` by hand and overrides
``run(ctx)``, reading ``ctx.cfg(path)`` and ``ctx.inputs[stage]`` itself.

``run`` (which calls ``compute``) executes inside a Ray task and may itself launch Ray tasks, Ray Data pipelines
or a Ray Train trainer (then declare ``resources = {"num_cpus": 0}`` so the
coordinating task does not hold the CPUs its workers need, and declare what they take:
``train_job = "train.nugget"`` (the config section of its Ray Train job), ``fans_out =
True`` (Ray Data / Ray tasks over the free CPUs), or override :meth:`Stage.demand`). A
stage that runs models in its own task declares ``uses_device = True`` and places them on
``ctx.device`` (``run.device``; its task then gets one GPU where the cluster has them,
:mod:`stages.framework.devices`). The
executor starts a stage only when its whole demand is free (see
:mod:`stages.framework.resources`), longest expected path first. It must be a pure function
of its declared config sections and its upstream artifacts: the framework caches its
output under a key derived from exactly those (see :mod:`stages.framework.keys`).

One registered stage per module (code several share goes in a module of its own, e.g.
`stages.nugget2d.nugget2d_stage`), so an edit to one stage's module re-keys only that stage.
What does not change what a stage computes stays out of its code: its expected duration
(``expected_seconds``, which orders ready stages), its one-line ``description`` and the
config paths that name its MLflow run (``run_name_keys``) are its row of the stage table
``stages/stage_table.json`` (:mod:`stages.framework.stage_table`), read through
:meth:`Stage.expected`, :meth:`Stage.describe` and :meth:`Stage.name_keys`. A registered
stage does not set them as class attributes; a class that does (a test's throwaway stage)
keeps its own values.

Logging: one path. A stage module reports only through its :class:`StageContext`, into
the stage's MLflow run (never through ``ctx.logger`` directly):

- ``ctx.log_metrics({name: number}, step=None)``: final values (no ``step``) also go into
  the artifact's manifest (``metrics``); per-step values (``step=s``) are curves. Names are
  ``[<system or group>/ or .]<metric>``. A mean over examples (tokens, documents, queries)
  is logged with its n in the same call: ``<name>_n``, or one n shared by several means,
  named where they are computed: ``<system>/n`` for a row of an evaluation table
  (`stages.evaluation.publish`), ``documents`` / ``<prefix>_count`` for data statistics,
  ``heldout_ratio_docs`` / ``sample_tokens`` / ``heldout_tokens`` in calibrate_threshold,
  ``<name>_n`` of a training summary (`stages.training.launch.final_metrics`). In MLflow
  ``<name>_n`` / ``<name>/n`` become params of the run, not metrics
  (`stages.framework.tracking.is_sample_size`); the manifest keeps them with the metrics;
- ``ctx.set_tags({key: value})``: strings describing the run (stand-ins used, scorer
  stage), never numbers;
- ``ctx.log_artifact(path)``: a small file of the output (tables, plots, stats.json);
- ``ctx.nested_runs()``: a picklable factory of runs nested under the stage's run (one per
  Tune trial); each is a `stages.framework.tracking.RunLogger`.

Training stages hand ``ctx.logger`` to `stages.training.launch.fit`; rank 0 of the Ray Train
loop logs per-step metrics through that same `RunLogger` (names and cadence: module
docstring of :mod:`stages.training.loop`), and the stage logs the fit's summary
(`stages.training.launch.final_metrics`) with ``ctx.log_metrics``. The executor alone logs
params (the stage's config), ``stage_seconds`` and error / skip tags.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Generic, TypeVar

from stages.framework import stage_table
from stages.framework.contract import (
    Contract,
    build_config,
    collected_field,
    contract_arguments,
    producer_names,
    read_inputs,
    section_fields,
)
from stages.framework.estimates import table_seconds
from stages.framework.resources import ALL, Demand, add, section_value, task_demand, worker_demand
from stages.framework.tracking import NestedRuns, RunFacts, RunLogger, table_columns


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
    # the torch device of a stage with ``uses_device`` (resolved from run.device in its
    # task, `stages.framework.devices`); "cpu" for every other stage
    device: str = "cpu"

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

    def log_artifacts(self, directory: Path, artifact_path: str) -> None:
        """Copy a folder of the output (e.g. a trained model) into the MLflow run's artifacts."""
        self.logger.log_artifacts(directory, artifact_path)

    def log_model(self, name: str, code: str, readme: Path, **pyfunc: Any) -> str:
        """Log an MLflow Model (pyfunc, `RunLogger.log_model`) linked to this stage's run."""
        return self.logger.log_model(name, code, readme, **pyfunc)

    def log_table(self, rows: list[dict[str, Any]], artifact_file: str) -> None:
        """Per-example rows as an MLflow table (``artifact_file`` ends in .json): columns
        are the union of the rows' keys, missing values None."""
        self.logger.log_table(table_columns(rows), artifact_file)

    def set_tags(self, tags: dict[str, Any]) -> None:
        """Tag this stage's MLflow run (values become strings)."""
        self.logger.set_tags({k: str(v) for k, v in tags.items()})

    def producing_run(self) -> RunFacts:
        """The MLflow runs producing this output (`RunFacts`): provenance to show (the
        report's header), never an input to what the stage computes (its key ignores it)."""
        return self.logger.run_facts()

    def nested_runs(self) -> NestedRuns:
        """A picklable factory of MLflow runs nested under this stage's run."""
        return self.logger.nested_runs()

    def write_json(self, name: str, obj: Any) -> Path:
        target = self.output_dir / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False) + "\n")
        return target


def _short(value: Any) -> str:
    """A config value as a run name shows it (floats without trailing zeros)."""
    return f"{value:g}" if isinstance(value, float) else str(value)


ConfigT = TypeVar("ConfigT")
InputsT = TypeVar("InputsT")
OutputT = TypeVar("OutputT")


class Stage(Generic[ConfigT, InputsT, OutputT]):
    """Base class of a DAG stage; see the module docstring for the contract."""

    name: ClassVar[str]
    # the header's type arguments (`stages.framework.contract`); None on a stage without them
    config_class: ClassVar[type | None] = None
    inputs_class: ClassVar[type | None] = None
    output: ClassVar[type[Contract] | None] = None  # also None for a terminal stage (nothing reads its output)
    # a stage reading some outputs only when their stage is registered (`stages.framework.optional`)
    required_upstream: ClassVar[tuple[str, ...]] = ()
    optional_upstream: ClassVar[tuple[str, ...] | None] = None
    upstream: ClassVar[tuple[str, ...]] = ()
    config_keys: ClassVar[tuple[str, ...]] = ()
    version: ClassVar[str] = "1"
    resources: ClassVar[dict[str, float]] = {"num_cpus": 1}  # Ray options of the task running `run`
    train_job: ClassVar[str] = ""  # config section (a TrainJob) of the Ray Train fits `run` makes, one at a time
    fans_out: ClassVar[bool] = False  # `run` spreads Ray Data / Ray tasks over the free CPUs
    # `run` runs models in its own task on ctx.device: given one GPU where run.device
    # resolves to CUDA for the cluster (`stages.framework.devices`)
    uses_device: ClassVar[bool] = False
    # Scheduling / presentation metadata: a registered stage's come from its row of
    # `stages.framework.stage_table` (read them with expected() / describe() /
    # name_keys()), so they stay out of its cache key; these are the defaults, and a
    # class that sets one itself (a test's throwaway stage) keeps its own.
    expected_seconds: ClassVar[float] = 60.0  # rough duration: ranks ready stages (longest path first)
    description: ClassVar[str] = ""
    # config paths (inside config_keys) whose values name the stage's MLflow run, e.g.
    # ("r=nugget.ratio", "l=nugget.scorer_layer") -> "train_nugget r=0.1 l=3"; an entry
    # without "label=" is labelled by its last path segment
    run_name_keys: ClassVar[tuple[str, ...]] = ()
    # every metric of this stage is also copied to the pipeline's parent run (headline numbers)
    parent_metrics: ClassVar[bool] = False
    # JSON files of the stage's output (each a list of flat dicts) the executor logs to the
    # parent run as MLflow tables (columns: the union of the rows' keys, a missing value None)
    parent_tables: ClassVar[tuple[str, ...]] = ()
    # inputs `run` reads from outside the artifact store, by path: their content enters the
    # cache key (`stages.framework.external`). `external_paths`: config fields (inside
    # config_keys) holding a local file, folder or glob; `external_models`: fields holding a
    # model as a hub id or a local folder. An empty value is not read.
    external_paths: ClassVar[tuple[str, ...]] = ()
    external_models: ClassVar[tuple[str, ...]] = ()
    # a stage that is part of the DAG only where a bool config value says so: its dotted path
    # (inside config_keys); off, the DAG of that config has no such stage
    # (`stages.framework.dag.Dag.for_config`), and readers that take it as an optional or
    # collected input go without it
    switch: ClassVar[str] = ""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Derive ``config_keys`` and ``upstream`` from a typed header (module docstring)."""
        super().__init_subclass__(**kwargs)
        declared = contract_arguments(cls, Stage)
        if declared is None:
            return
        if "upstream" in vars(cls) or "config_keys" in vars(cls):
            raise TypeError(f"stage class {cls.__qualname__}: upstream and config_keys come from its "
                            "Stage[Config, Inputs, Output] header; declare them there only")
        cls.config_class, cls.inputs_class, cls.output = declared
        cls.config_keys = tuple(f.path for f in section_fields(cls.config_class))
        required, optional = producer_names(cls.inputs_class)
        cls.upstream = required
        # `stages.framework.optional` adds the registered optional and collected ones to upstream
        if optional or collected_field(cls.inputs_class) is not None:
            cls.required_upstream, cls.optional_upstream = required, optional

    @classmethod
    def offline_sources(cls, sections: dict[str, Any]) -> tuple[str, ...]:
        """The offline sources (`stages.sources.registry` names) `run` reads from
        ``ctx.sources_dir`` given its declared config ``sections``; their files enter the
        cache key (`stages.framework.external`)."""
        return ()

    @classmethod
    def _listed(cls, field: str) -> Any:
        """``field`` of `stages.framework.stage_table`: set by the class itself (or a base
        class below `Stage`), else the table's row for ``name``, else `Stage`'s default."""
        for klass in cls.__mro__:
            if klass is Stage:
                break
            if field in vars(klass):
                return vars(klass)[field]
        listed = stage_table.lookup(cls.name, field)
        return getattr(Stage, field) if listed is None else listed

    @classmethod
    def expected(cls, profile: str = "tiny", precision: str | None = None) -> float:
        """Rough seconds the stage takes under ``profile`` computing in ``precision``: ranks ready
        stages where no earlier run measured it (`stages.framework.estimates.table_seconds`)."""
        return table_seconds(cls._listed("expected_seconds"), profile, precision, float(Stage.expected_seconds))

    @classmethod
    def describe(cls) -> str:
        """One line on what the stage computes (``python -m pipelines.stage --list``)."""
        return str(cls._listed("description"))

    @classmethod
    def name_keys(cls) -> tuple[str, ...]:
        """The config paths whose values name the stage's MLflow run (`run_name`)."""
        return tuple(cls._listed("run_name_keys"))

    @classmethod
    def run_name(cls, sections: dict[str, Any]) -> str:
        """The MLflow run name: the stage name, then ``label=value`` of each `name_keys`
        entry read from the declared config ``sections`` (lists joined by ``,``)."""
        parts = [cls.name]
        for entry in cls.name_keys():
            label, _, path = entry.rpartition("=")
            value = section_value(sections, path)
            many = isinstance(value, Sequence) and not isinstance(value, str)
            shown = ",".join(_short(v) for v in value) if many else _short(value)
            parts.append(f"{label or path.rsplit('.', 1)[-1]}={shown}")
        return " ".join(parts)

    @classmethod
    def demand(cls, sections: dict[str, Any]) -> Demand:
        """Everything the stage holds while it runs, given its declared config sections:
        its own task, plus ``train_job``'s worker group or, with ``fans_out``, every CPU
        free when it starts (``resources.ALL``).
        Override for anything else (e.g. concurrent Tune trials)."""
        own = task_demand(cls.resources)
        if cls.train_job:
            job = section_value(sections, cls.train_job)
            return Demand(add(own, worker_demand(job.num_workers, job.use_gpu)),
                          lower=f"{cls.train_job}.num_workers")
        if cls.fans_out:
            return Demand({**own, "CPU": ALL}, lower="")
        return Demand(own, lower=f"{cls.__name__}.resources")

    @classmethod
    def config_errors(cls, sections: dict[str, Any]) -> list[str]:
        """What makes its declared config sections unusable for this stage alone (a setting
        of another stage it depends on), checked before a run that will run it; the
        schema's own checks (`stages.config`) hold for every run and go there."""
        return []

    def run(self, ctx: StageContext) -> None:
        """What the framework calls: ``compute`` with the typed config and inputs of a
        stage with a typed header (a stage without one overrides this)."""
        if self.config_class is None or self.inputs_class is None:
            raise NotImplementedError(f"stage {self.name!r}: give it a Stage[Config, Inputs, Output] "
                                      "header and a compute(), or override run(ctx)")
        self.compute(ctx, build_config(self.config_class, ctx.config),
                     read_inputs(self.inputs_class, ctx.inputs))

    def compute(self, ctx: StageContext, cfg: ConfigT, inputs: InputsT) -> None:
        """The stage's work on its typed config and inputs: writes its output under
        ``ctx.output_dir`` (module docstring)."""
        raise NotImplementedError(f"stage {self.name!r} has a typed header but no compute()")

    @classmethod
    def check_output(cls, ctx: StageContext) -> None:
        """Read the written output back through the declared output class (its contract
        errors name the missing or malformed file), before the framework publishes it."""
        if cls.output is not None:
            cls.output.read(Artifact(ctx.stage, ctx.key, "", ctx.output_dir, {}))
