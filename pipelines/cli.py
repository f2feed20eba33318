"""Command-line entry points shared by ``pipelines/full.py`` and ``pipelines/stage.py``.

Order of work: parse arguments -> load the config (a value of the wrong type exits 2 at
once) -> preflight, collecting every problem before reporting any
(`stages.framework.plan_checks`: the config's range and relation errors, every missing
input of the planned stages, the planned stages' own config checks, the artifact root,
tracking server and sources the run needs) -> plan (cache keys, hits; only when the config
holds and every input is there) -> print the plan -> report the problems and stop, or stop
here for ``--dry-run`` -> connect to Ray -> execute -> print where the results are (the
last lines: the report's file and the parent run's MLflow page, :func:`print_results`).
Exit codes (`EXIT_HELP`): 0 success (``--dry-run``: nothing stops the run), 1 a stage
failed, 2 bad config or arguments (a bad artifact root or tracking URI, an impossible
relation between settings, included), 3 a required upstream output or input (a path a
stage reads, the offline sources) is missing and the config is otherwise fine, 128 +
the signal when stopped (130 Ctrl-C, 143 SIGTERM), with a line saying so. A store or
tracking failure while setting up is one line, not a traceback.

Quiet by default (`stages.framework.quiet`): stage tasks and Ray Train workers hide
library progress bars and per-report INFO lines, and the driver its scheduler lines
(``waits: ...``); ``--verbose`` shows everything (it sets ``NUGGET_VERBOSE=1``, which the
executor passes to every stage task's runtime env). No colour codes unless stdout is a
terminal and ``NO_COLOR`` is unset (Ray's worker-line prefixes included).
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
from collections.abc import Callable
from pathlib import Path

from pipelines.cost_cli import CostPrinter, add_cost_options, cost_option_error, cost_printer
from stages.config import ConfigError, PipelineConfig, load_config
from stages.config.uris import shown, sqlite_file
from stages.config.validate import errors as config_errors
from stages.framework import private_ray, quiet
from stages.framework.code_pins import PINS, save_pins
from stages.framework.dag import Dag, DagError, MissingInputError, PlannedStage
from stages.framework.executor import PipelineError, PipelineResult, execute
from stages.framework.plan_checks import CheckedRun, check_run, report
from stages.framework.preflight import MISSING, Problem, setup_errors
from stages.framework.shutdown import sigterm_as_exit, stop_signal
from stages.framework.store import ArtifactStore
from stages.framework.tracking import Tracker, default_tracking_uri
from stages.framework.tracking_auth import use_credentials

REPO = Path(__file__).resolve().parents[1]
MLFLOW_UI = "http://127.0.0.1:5000"  # what `make mlflow-ui` serves (the Makefile's MLFLOW_PORT)
REPORT_STAGE, REPORT_FILE = "report", "report.html"
EXIT_FAILED, EXIT_CONFIG, EXIT_MISSING = 1, 2, 3
EXIT_HELP = """exit codes:
  0  done (--dry-run: the plan holds, nothing would stop the run)
  1  a stage failed
  2  bad configuration or arguments: a value out of range, settings whose relation cannot
     hold, a group option that is not a name, a bad artifact root or tracking URI (or
     refused credentials, a deleted experiment), a stage folder that cannot be written,
     too little disk, GPUs this machine does not have, an unknown stage
  3  missing inputs (and no configuration problem): a path, glob or hub model / dataset a
     planned stage reads that is neither local nor served by the hub, the offline
     sources, or an upstream output pipelines.stage needs (absent or damaged)
  130, 143  stopped by Ctrl-C (SIGINT) or SIGTERM (ray job stop, a preemption): running
     stages were cancelled and their runs ended KILLED; the same command resumes

Before Ray starts (and on --dry-run) every problem is collected and reported at once: the
config errors, then every missing input with its config field, value and reading stages."""
log = logging.getLogger("nugget.pipeline")


def _setup_logging() -> None:
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s", force=True
    )


def _add_verbose(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--verbose", action="store_true",
                        help="show the libraries' progress bars and INFO lines (quiet by default)")


def _set_verbosity(verbose: bool) -> None:
    """Record ``--verbose`` (or an inherited ``NUGGET_VERBOSE=1``) for the Ray processes
    this driver starts; they quiet themselves (`stages.framework.quiet.apply`). The driver
    itself runs no library that draws progress bars, so it is left as it is."""
    os.environ[quiet.VERBOSE_ENV] = "1" if verbose or quiet.is_verbose() else "0"


def _fail(code: int, message: str) -> int:
    print(f"error: {message}", file=sys.stderr)
    return code


def _setup_failure(what: str, exc: BaseException) -> int:
    """A library error while opening the store or the tracker (bad root, URI, credentials):
    one line naming the key and the value, exit 2."""
    detail = " ".join(str(exc).split())[:600] or type(exc).__name__
    return _fail(EXIT_CONFIG, f"{what}: {type(exc).__name__}: {detail}")


def connect_ray(cfg: PipelineConfig) -> None:
    """Attach to run.ray_address / $RAY_ADDRESS, else start a private local Ray."""
    address = cfg.run.ray_address or os.environ.get("RAY_ADDRESS", "")
    if not address:
        # must precede `import ray`: makes a local Ray bind GCS/raylet to 127.0.0.1
        os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
    quiet.plain_ray_output(sys.stdout)  # no colour codes in a log file or under NO_COLOR
    import ray

    if ray.is_initialized():
        return
    if address:
        ray.init(address=address)
        return
    path = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p)
    ray.init(
        address="local",  # a private instance even if a `ray start` head runs on this machine
        num_cpus=cfg.run.num_cpus or None,
        include_dashboard=False,
        runtime_env={"env_vars": {"PYTHONPATH": path, **quiet.runtime_env_vars(quiet.is_verbose())}},
    )
    private_ray.mark()
    # this process now owns a Ray: if it is killed, the reaper stops what Ray leaves behind
    from stages.framework.reaper import start_reaper

    start_reaper(os.getpid())


def print_plan(plan: list[PlannedStage], store: ArtifactStore) -> None:
    """A line per planned stage: status, key, upstream stages, and why it runs (a damaged
    output, or what differs from the closest earlier output) or that it is kept under an
    accepted code change."""
    print(f"plan ({len(plan)} stages, artifact root {store.root_uri}):")
    for p in plan:
        ups = ",".join(p.upstream_keys) or "-"
        notes = [p.why] if p.why.startswith("damaged") else []
        notes += [f"miss: {p.reason}"] if p.reason and not p.forced else []
        if p.pin is not None:
            notes.append(f"{'accepting' if p.new_pin else 'accepted'} code change: {p.pin.line()}")
        shown = "".join(f"\n      ({n})" for n in notes)
        print(f"  {p.name:22s} {p.status:6s} key={p.key}  upstream={ups}{shown}")


def _add_accept(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--accept-code-change", action="append", default=[], metavar="STAGE",
        help="keep STAGE's latest output although its code changed (config, upstream and environment "
             "unchanged); recorded in <artifact root>/code_pins.json and the stage's MLflow run. Repeatable")


def mlflow_run_url(tracking_uri: str, experiment_id: str, run_id: str) -> str:
    """The parent run's page: on the tracking server, or on the UI ``make mlflow-ui``
    serves for a local store. ``workflowType=machine_learning``: MLflow 3's UI picks its
    GenAI or its classic view from this URL parameter (else from the browser's last
    choice, GenAI in a fresh browser); the experiment's kind tag no longer decides it."""
    served = tracking_uri.startswith(("http://", "https://"))
    base = tracking_uri.rstrip("/") if served else MLFLOW_UI
    return f"{base}/#/experiments/{experiment_id}/runs/{run_id}?workflowType=machine_learning"


def serve_command(tracking_uri: str) -> str:
    """What serves the page :func:`mlflow_run_url` names, for a sqlite store ('' for a
    server): ``make mlflow-ui`` with the root of a default store (``<root>/mlflow.db``)."""
    db = sqlite_file(tracking_uri)
    if db is None:
        return ""
    if db.name == "mlflow.db":
        return f"make mlflow-ui NUGGET_ARTIFACT_ROOT={db.parent}"
    return f"mlflow ui --backend-store-uri {tracking_uri} --host 127.0.0.1 --port 5000"


def report_file(result: PipelineResult) -> str:
    """The report this run made or found cached, '' when the report stage was not planned."""
    done = [o for o in result.outcomes if o.name == REPORT_STAGE and o.status in ("ran", "hit") and o.uri]
    return f"{done[0].uri}/{REPORT_FILE}" if done else ""


def print_results(result: PipelineResult, cfg: PipelineConfig, store: ArtifactStore) -> None:
    """The stage table, then where everything is; the last lines are the answer: the
    report's file and the parent run's MLflow page."""
    ran = sum(o.status == "ran" for o in result.outcomes)
    hits = sum(o.status == "hit" for o in result.outcomes)
    print(f"\ndone: {ran} stage(s) ran, {hits} cached")
    for o in result.outcomes:
        print(f"  {o.name:22s} {o.status:4s} {o.seconds:7.1f}s  {o.uri}")
    print(f"\nartifacts  : {store.root_uri}")
    print(f"MLflow     : {result.tracking_uri}, experiment {cfg.run.experiment!r}")
    serve = serve_command(result.tracking_uri)
    if serve:
        print(f"serve it   : {serve}")
    report = report_file(result)
    if report:
        print(f"report     : {report}")
    print(f"MLflow run : {mlflow_run_url(result.tracking_uri, result.experiment_id, result.parent_run_id)}")


def tracker_for(cfg: PipelineConfig, store: ArtifactStore) -> Tracker:
    uri = default_tracking_uri(cfg.run.tracking_uri, store.local, store.base)
    return Tracker(uri, cfg.run.experiment, artifact_location=f"{store.root_uri}/mlflow-artifacts")


def run_plan(cfg: PipelineConfig, checked: CheckedRun, entry: str, dry_run: bool,
             planned: list[PlannedStage] | None = None, cost: CostPrinter | None = None) -> int:
    """Print the plan (and, given ``cost``, the cost plan, which needs the config only),
    report the problems preflight found (and stop) or, unless ``dry_run``, record the code
    changes it accepts and execute the plan. ``planned``: the whole plan, where
    ``checked.plan`` holds only the stages to execute (its cached upstreams may be kept
    under a code change accepted now)."""
    if checked.plan is None or checked.store is None:
        print("plan: not computed (cache keys fingerprint the inputs and hold only for a valid config)")
        if cost is not None and (error := cost(None)):
            return _fail(EXIT_CONFIG, error)
        return report(checked.problems)
    plan, store = checked.plan, checked.store
    print_plan(plan, store)
    if cost is not None and (error := cost([p.name for p in planned or plan])):
        return _fail(EXIT_CONFIG, error)
    if checked.problems:
        return report(checked.problems)
    if dry_run:
        return 0
    accepted = [p.pin for p in planned or plan if p.new_pin and p.pin is not None]
    if accepted:
        save_pins(store, accepted)
        for pin in accepted:
            print(f"{pin.stage}: {pin.line()}, keeping output {pin.key} (recorded in {store.root_uri}/{PINS})")
    try:
        tracker = tracker_for(cfg, store)
    except ValueError as exc:
        return _fail(EXIT_CONFIG, str(exc))
    except (*setup_errors(), ImportError) as exc:  # ImportError: the URI's database driver is not installed
        uri = shown(cfg.run.tracking_uri) or f"'' (the sqlite store in {store.root_uri})"
        return _setup_failure(f"run.tracking_uri={uri}", exc)
    try:
        with sigterm_as_exit():
            if any(p.will_run for p in plan):
                connect_ray(cfg)
            with sigterm_as_exit():  # again: ray.init installs its own handler
                result = execute(cfg, plan, store, tracker, entry)
    except PipelineError as exc:
        return _fail(EXIT_FAILED, str(exc))
    except (KeyboardInterrupt, SystemExit) as exc:
        signum = stop_signal(exc)
        if signum is None:
            raise
        return _fail(128 + signum, f"stopped by {signal.Signals(signum).name}: the running stages were cancelled "
                     "and their MLflow runs ended KILLED; nothing partial was published. The same command "
                     "resumes (finished stages are cached; training resumes from its last checkpoint)")
    print_results(result, cfg, store)
    return 0


def _load(overrides: list[str]) -> tuple[PipelineConfig, list[str]] | int:
    """The config and its range and relation errors (reported with the rest of the
    preflight), or exit 2 for one that does not even type-check."""
    try:
        cfg = load_config(overrides, check=False)
    except ConfigError as exc:
        return _fail(EXIT_CONFIG, f"config: {exc}")
    # user:password@ of the tracking URI moves into MLflow's credential variables at once:
    # nothing after this (messages, MLflow's run links, params, Ray tasks) sees it
    cfg.run.tracking_uri = use_credentials(cfg.run.tracking_uri)
    return cfg, config_errors(cfg)


def default_dag() -> Dag:
    """The pipeline's DAG (`stages.registry`), imported when first needed."""
    from stages.registry import DAG

    return DAG


def main_full(argv: list[str] | None = None, dag: Dag | None = None) -> int:
    """``python pipelines/full.py [--dry-run] [key=value ...]``: run the whole DAG."""
    graph = dag or default_dag()

    parser = argparse.ArgumentParser(prog="python pipelines/full.py", description=main_full.__doc__,
                                     epilog=EXIT_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("overrides", nargs="*", help="config overrides, e.g. nugget.ratio=0.25")
    parser.add_argument("--dry-run", action="store_true",
                        help="the preflight: print the plan, or every problem that would stop the run, and stop")
    _add_accept(parser)
    _add_verbose(parser)
    add_cost_options(parser)
    args = parser.parse_intermixed_args(argv)
    if error := cost_option_error(args):
        return _fail(EXIT_CONFIG, error)
    _setup_logging()
    _set_verbosity(args.verbose)
    loaded = _load(args.overrides)
    if isinstance(loaded, int):
        return loaded
    cfg, errors = loaded
    configured = _configured(graph, cfg)
    if isinstance(configured, int):
        return configured
    graph = configured
    checked = _checked(cfg, lambda: check_run(graph, cfg, errors, cfg.run.targets or None,
                                              accept_code_change=args.accept_code_change))
    if isinstance(checked, int):
        return checked
    cost = cost_printer(cfg, args, lambda: graph.closure(cfg.run.targets or graph.order))
    return run_plan(cfg, checked, "full", args.dry_run, cost=cost)


def _configured(graph: Dag, cfg: PipelineConfig) -> Dag | int:
    """``graph`` without the stages ``cfg`` switches off (`Dag.for_config`), or exit 2 when a
    stage that stays requires one of them."""
    try:
        return graph.for_config(cfg)
    except DagError as exc:
        return _fail(EXIT_CONFIG, f"config: {exc}")


def _checked(cfg: PipelineConfig, check: Callable[[], CheckedRun]) -> CheckedRun | int:
    """``check()``, or exit 2 naming the root when the store cannot be read (credentials,
    network, a file as root), or 3 when an input vanished between its check and its key."""
    try:
        return check()
    except MissingInputError as exc:
        return _fail(EXIT_MISSING, str(exc))
    except setup_errors() as exc:
        return _setup_failure(f"run.artifact_root={shown(cfg.run.artifact_root)}", exc)


def main_stage(argv: list[str] | None = None, dag: Dag | None = None) -> int:
    """``python -m pipelines.stage NAME [--force] [--dry-run] [key=value ...]``: rerun one
    stage on the cached outputs of its upstream stages."""
    graph = dag or default_dag()

    parser = argparse.ArgumentParser(prog="python -m pipelines.stage", description=main_stage.__doc__,
                                     epilog=EXIT_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("name", nargs="?", help="stage to run (see --list)")
    parser.add_argument("overrides", nargs="*", help="config overrides, e.g. nugget.ratio=0.25")
    parser.add_argument("--force", action="store_true", help="recompute even if cached")
    parser.add_argument("--dry-run", action="store_true",
                        help="the preflight: print the plan, or every problem that would stop the run, and stop")
    parser.add_argument("--list", action="store_true", help="list stages and dependencies")
    _add_accept(parser)
    _add_verbose(parser)
    add_cost_options(parser)
    args = parser.parse_intermixed_args(argv)
    if error := cost_option_error(args):
        return _fail(EXIT_CONFIG, error)
    if args.list:
        for name in graph.order:
            s = graph.stages[name]
            print(f"{name:22s} <- {', '.join(s.upstream) or '-':30s} {s.describe()}")
        return 0
    if not args.name:
        return _fail(EXIT_CONFIG, "name a stage (see: python -m pipelines.stage --list)")
    if "=" in args.name:
        return _fail(EXIT_CONFIG, f"the first argument must be a stage name, got {args.name!r}")
    _setup_logging()
    _set_verbosity(args.verbose)
    loaded = _load(args.overrides)
    if isinstance(loaded, int):
        return loaded
    cfg, errors = loaded
    configured = _configured(graph, cfg)
    if isinstance(configured, int):
        return configured
    graph = configured
    checked = _checked(cfg, lambda: check_run(graph, cfg, errors, [args.name], force=[args.name] if args.force else [],
                                              only=args.name, targets_key="",
                                              accept_code_change=args.accept_code_change))
    if isinstance(checked, int):
        return checked
    cost = cost_printer(cfg, args, lambda: [args.name], only_targeted=True)  # its upstream stages do not run
    if checked.plan is None or checked.store is None:
        return run_plan(cfg, checked, f"stage:{args.name}", args.dry_run, cost=cost)
    missing = [p for p in checked.plan if p.name != args.name and not p.hit]
    if missing:  # the plan shows them; the target alone runs
        print_plan(checked.plan, checked.store)
        if error := cost(None):
            return _fail(EXIT_CONFIG, error)
        over = " ".join(args.overrides)
        lines = [
            f"upstream stage {p.name!r}'s cached output for this config (key {p.key}) is {p.why}; "
            f"recompute it with:\n  python -m pipelines.stage {p.name} --force {over}".rstrip()
            if p.why.startswith("damaged") else
            f"upstream stage {p.name!r} has no cached output for this config (key {p.key}"
            f"{'; ' + p.reason if p.reason else ''}); "
            f"produce it with:\n  python -m pipelines.stage {p.name} {over}".rstrip()
            for p in missing
        ]
        lines.append(f"or run everything it needs: python pipelines/full.py run.targets=[{args.name}] {over}".rstrip())
        return report([*checked.problems, Problem(MISSING, "\n".join(lines))])
    target = [p for p in checked.plan if p.name == args.name]
    return run_plan(cfg, CheckedRun(target, checked.store, checked.problems), f"stage:{args.name}", args.dry_run,
                    planned=checked.plan, cost=cost)
