"""Run the Ray Tune sweep over Nugget's r x l x objective (stage ``sweep_nugget``) with
the upstream stages it needs; cached stages are reused.

    python pipelines/sweep.py [--dry-run] [key=value ...]
    python pipelines/sweep.py train.sweep.ratios=[0.1,0.25] train.sweep.scorer_layers=[0,3]

``--help`` lists the sweep's grid keys (``train.sweep.*``) with their help text and
current values, and the other config sections the sweep reads.
"""

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pipelines.cli import main_full  # noqa: E402
from pipelines.config_help import describe_config  # noqa: E402

STAGE = "sweep_nugget"
GRID_SECTION = "train.sweep"


def sweep_keys(overrides: Sequence[str]) -> str:
    """The grid keys with their help and values for ``overrides`` (the schema defaults
    when the config does not load: ``--help`` must work even then), and the other
    sections the sweep stage reads."""
    from stages.config import ConfigError, PipelineConfig, load_config
    from stages.registry import DAG

    try:
        cfg, origin = load_config([o for o in overrides if "=" in o]), "resolved config"
    except ConfigError:
        cfg, origin = PipelineConfig(), "schema defaults"
    others = [k for k in DAG.get(STAGE).config_keys if k != GRID_SECTION]
    return "\n".join([f"sweep grid keys ({origin}):",
                      *(f"  {line}" for line in describe_config(cfg, [GRID_SECTION])),
                      f"it also reads: {', '.join(others)} (see: nugget config SECTION)"])


def build_parser(overrides: Sequence[str] = ()) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python pipelines/sweep.py",
        description=f"Run the Ray Tune sweep (stage {STAGE}: a grid over nugget.ratio x "
        "nugget.scorer_layer x train.nugget.objective) and the stages it needs; cached stages are reused.",
        epilog=sweep_keys(overrides), formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("overrides", nargs="*", help="config overrides, e.g. train.sweep.ratios=[0.1,0.25]")
    parser.add_argument("--dry-run", action="store_true", help="print the plan and stop")
    parser.add_argument("--verbose", action="store_true", help="show the libraries' progress bars and INFO lines")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Parse (and answer ``--help``) here, then run the DAG up to the sweep."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if "-h" in argv or "--help" in argv:
        build_parser(argv).parse_intermixed_args(argv)  # prints the help and exits
    return main_full([f"run.targets=[{STAGE}]", *argv])


if __name__ == "__main__":
    sys.exit(main())
