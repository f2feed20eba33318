"""``--cost-device NAME [--gpus N] [--gpu-results DIR]`` of ``--dry-run``: the planned
stages' estimated device-hours on NAME and the total, wall-clock on N of them
(`stages.costs`; docs/cluster.md). Flags rather than a ``cost.*`` config section: the
device a plan is priced on is no setting of the experiment, so it stays out of the
resolved config, the run's MLflow parameters and the report.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from pathlib import Path

from stages.config import PipelineConfig
from stages.costs.efficiency import RESULTS_ENV, EfficiencyError
from stages.costs.peaks import known_devices, table_entry
from stages.costs.plan import cost_plan
from stages.costs.render import render
from stages.framework.dag import DagError

#: prints the cost plan of the stages named (None: the stages the command targets), or
#: returns the error that stops it ('' when none)
CostPrinter = Callable[[Sequence[str] | None], str]


def add_cost_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--cost-device", metavar="NAME", default=None,
                        help=f"with --dry-run: each planned stage's estimated FLOPs, bytes and device-hours on "
                             f"NAME, and the total (one of: {', '.join(known_devices())})")
    parser.add_argument("--gpus", type=int, default=1, metavar="N",
                        help="with --cost-device: also the wall-clock on N of them (training stages "
                             "data-parallel; default 1)")
    parser.add_argument("--gpu-results", metavar="DIR", default=None,
                        help=f"with --cost-device: the GPU checks' folder whose newest efficiency.json "
                             f"gives the measured efficiencies (default ${RESULTS_ENV}, else "
                             "benchmarks/results/gpu)")


def cost_option_error(args: argparse.Namespace) -> str:
    """What is wrong with the cost flags ('' when nothing), checked before any work."""
    if args.cost_device is None:
        given = [f for f, v in (("--gpus", args.gpus != 1), ("--gpu-results", args.gpu_results)) if v]
        return f"{' and '.join(given)} {'go' if len(given) > 1 else 'goes'} with --cost-device" if given else ""
    if not args.dry_run:
        return "--cost-device goes with --dry-run (the cost plan is printed instead of running)"
    if args.gpus < 1:
        return f"--gpus {args.gpus}: must be >= 1"
    try:
        table_entry(args.cost_device)
    except ValueError as exc:
        return f"--cost-device: {exc}"
    return ""


def print_cost(cfg: PipelineConfig, names: Sequence[str], args: argparse.Namespace) -> str:
    """Print the cost plan of stages ``names`` (nothing without ``--cost-device``); the
    error of an efficiency file that cannot be read, '' otherwise."""
    if args.cost_device is None:
        return ""
    results = Path(args.gpu_results).expanduser() if args.gpu_results else None
    try:
        plan = cost_plan(cfg, names, args.cost_device, args.gpus, results)
    except EfficiencyError as exc:
        return str(exc)
    print("\n" + "\n".join(render(plan)))
    return ""


def cost_printer(cfg: PipelineConfig, args: argparse.Namespace, targeted: Callable[[], Sequence[str]],
                 only_targeted: bool = False) -> CostPrinter:
    """What `pipelines.cli.run_plan` calls after the plan: the cost plan of the planned
    stages, or of ``targeted()`` where there is no plan (or always, ``only_targeted``: a
    stage rerun prices that stage alone)."""
    def cost(names: Sequence[str] | None) -> str:
        if names is None or only_targeted:
            try:
                names = targeted()
            except DagError:  # an unknown or switched-off target: the preflight reports it
                return ""
        return print_cost(cfg, names, args)

    return cost
