"""Rerun one stage on cached upstream outputs.

    python -m pipelines.stage --list
    python -m pipelines.stage NAME [--force] [--dry-run] [--verbose] [key=value ...]
"""

import sys

from pipelines.cli import main_stage

if __name__ == "__main__":
    sys.exit(main_stage())
