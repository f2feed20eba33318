"""Everything that would stop a run, found in one pass before Ray starts (``--dry-run``
included), and reported together.

One attempt shows everything to fix, so that no problem hides another (a config error
hiding the missing inputs, a stage's own config check hiding the places the run needs;
docs/reliability.md). `check_run` collects, without stopping at any:

- the config's range and relation errors (`stages.config.validate.errors`: the schema's
  bounds, each section's cross-field checks, the split, depth and budget relations);
- every declared external input of the planned stages that cannot be read
  (`stages.framework.external.missing_inputs`): field, value, what is wrong, readers;
- the own config checks of the stages that will run (`Stage.config_errors`);
- the places the run needs (`stages.framework.preflight`: artifact root, tracking
  server, offline sources; `stages.framework.preflight_disk`: the folders of the stages to
  run and the free space their outputs need; `stages.framework.preflight_tracker`: a
  deleted experiment, a held store lock, read without writing to the store);
- the GPUs the stages to run ask for, where the run's GPUs are known
  (`stages.framework.preflight_device`), and the hub models and datasets they would
  download that neither the local cache nor the hub can serve
  (`stages.framework.preflight_hub`).

Only a clean config with every input present is planned (cache keys fingerprint the
inputs, and hits depend on the keys); otherwise every stage of the closure of the targets
counts as one that will run, since which are cached cannot be known yet. `report` prints
the problems by kind and returns the exit code: 2 if any is a configuration problem (a
fix may change which inputs are needed), else 3 (missing inputs).
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from stages.framework.code_pins import CodeChangeError
from stages.framework.dag import Dag, DagError, PlannedStage
from stages.framework.keys import stage_sections
from stages.framework.preflight import CONFIG, MISSING, Problem, exit_code, preflight
from stages.framework.preflight_device import device_problems
from stages.framework.preflight_disk import disk_problems
from stages.framework.preflight_hub import hub_problems
from stages.framework.preflight_tracker import tracker_problems
from stages.framework.store import ArtifactStore

if TYPE_CHECKING:
    from stages.config.schema import PipelineConfig
    from stages.framework.stage import Stage

# report headings of the problems listed one per line under them (the others, the
# places, are one self-contained message each)
CONFIG_HEADING = "config"
INPUTS_HEADING = "missing inputs"
EXIT_MEANINGS = {CONFIG: "bad configuration", MISSING: "missing input"}


@dataclass(frozen=True)
class CheckedRun:
    """What `check_run` found: the plan (None when a problem stopped planning), the
    store it was planned against (None when ``run.*`` itself is invalid) and every
    problem."""

    plan: list[PlannedStage] | None
    store: ArtifactStore | None
    problems: list[Problem]


def _listed(code: int, heading: str, lines: Iterable[str]) -> list[Problem]:
    return [Problem(code, line, heading) for line in lines]


def stage_config_problems(stages: Iterable[type[Stage]], cfg: PipelineConfig) -> list[Problem]:
    """`Stage.config_errors` of ``stages`` (classes), each prefixed with the stage's name."""
    return _listed(CONFIG, CONFIG_HEADING, (f"{s.name}: {e}" for s in stages
                                            for e in s.config_errors(stage_sections(s, cfg))))


def check_run(graph: Dag, cfg: PipelineConfig, config_errors: list[str], targets: list[str] | None,
              force: Iterable[str] = (), only: str | None = None, targets_key: str = "run.targets: ",
              probe: bool = True, accept_code_change: Iterable[str] = ()) -> CheckedRun:
    """Every problem of running ``targets`` (None: the whole DAG) of ``graph`` with
    ``cfg``, whose range and relation errors ``config_errors`` the caller collected at
    load. ``only``: the one stage the run executes (``pipelines.stage``; the others must
    be cached); ``targets_key`` prefixes an unknown target's message; ``probe``: ask an
    HTTP tracking server; ``accept_code_change``: stages whose code change is accepted
    (`stages.framework.code_pins`; one that cannot be is a config problem). Errors of the store itself (credentials, network) propagate:
    the caller names the root."""
    problems = _listed(CONFIG, CONFIG_HEADING, config_errors)
    try:
        names = graph.closure(targets or graph.order)
    except DagError as exc:
        problems += _listed(CONFIG, CONFIG_HEADING, [f"{targets_key}{exc}"])
        names = []
    problems += _listed(MISSING, INPUTS_HEADING, (m.line() for m in graph.missing_inputs(cfg, names)))
    # a run.* error (a bad root or tracking URI) makes the places unknowable: say it once
    store = None if any(e.startswith("run.") for e in config_errors) else ArtifactStore(cfg.run.artifact_root)
    plan = None
    if problems or store is None:
        running = [graph.stages[n] for n in names if only in (None, n)]
    else:
        try:
            plan = graph.plan(cfg, store, targets=targets, force=force, accept_code_change=accept_code_change)
        except CodeChangeError as exc:
            problems += _listed(CONFIG, CONFIG_HEADING, [str(exc)])
            running = []
        else:
            running = [p.stage for p in plan if p.will_run and only in (None, p.name)]
    problems += stage_config_problems(running, cfg)
    problems += device_problems(cfg, running)
    problems += hub_problems(cfg, running, probe=probe, heading=INPUTS_HEADING)
    if store is not None:
        problems += preflight(cfg, store, running, probe=probe)
        problems += tracker_problems(cfg, store, problems, probe=probe)
        problems += disk_problems(cfg, store, running)
    return CheckedRun(plan, store, problems)


def report(problems: list[Problem]) -> int:
    """Print ``problems`` on stderr (config errors and missing inputs each under one
    heading, a line each; every other problem on its own), then a line with their count
    and the exit code; return that code (`stages.framework.preflight.exit_code`)."""
    out = sys.stderr
    for heading in (CONFIG_HEADING, INPUTS_HEADING):
        lines = [p.message for p in problems if p.heading == heading]
        if lines:
            print(f"error: {heading}:\n  " + "\n  ".join(lines), file=out)
    for p in problems:
        if p.heading not in (CONFIG_HEADING, INPUTS_HEADING):
            print(f"error: {p.message}", file=out)
    code = exit_code(problems)
    noun = "problem" if len(problems) == 1 else "problems"
    print(f"preflight: {len(problems)} {noun}, nothing was started; exit {code} ({EXIT_MEANINGS[code]})", file=out)
    return code
