"""``nugget lm-eval``: lm-evaluation-harness's own command line with the ``nugget2d`` model
registered (docs/harness.md).

lm_eval 0.4 has no plugin discovery: its model registry holds its own models and whatever
was imported before it runs, so a bare ``lm_eval --model nugget2d`` cannot find ours. This
command imports `stages.nugget2d.harness.lm` (which registers ``nugget2d``) and then hands
every argument to lm_eval's CLI unchanged, so each lm_eval flag works as documented there."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from pipelines.cli import EXIT_CONFIG

MISSING = "needs the harness extra: pip install -e '.[harness]'"


def main_lm_eval(argv: Sequence[str]) -> int:
    """Run lm_eval's CLI on ``argv`` with ``nugget2d`` registered; exit 2 without lm_eval."""
    try:
        from lm_eval._cli import HarnessCLI
        from lm_eval.utils import setup_logging
    except ImportError as exc:
        if (exc.name or "").split(".")[0] != "lm_eval":
            raise  # lm_eval is there but broken: its own error says why
        print(MISSING, file=sys.stderr)
        return EXIT_CONFIG
    import stages.nugget2d.harness.lm  # noqa: F401  (registers "nugget2d")

    setup_logging()
    saved = sys.argv
    sys.argv = ["nugget lm-eval", *argv]  # HarnessCLI parses sys.argv itself
    try:
        cli = HarnessCLI()
        cli.execute(cli.parse_args())
    finally:
        sys.argv = saved
    return 0
