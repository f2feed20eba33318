"""Run the whole nugget-pipeline DAG (or ``run.targets`` and their upstreams).

    python pipelines/full.py [--dry-run] [--verbose] [key=value ...]
    ray job submit --working-dir . -- python pipelines/full.py [key=value ...]

Attaches to ``$RAY_ADDRESS`` (set by ``ray job submit``) or starts a local Ray. Cached
stages are reused; ``--verbose`` shows the libraries' progress bars and INFO lines
(quiet by default). See docs/config.md for the config system and docs/results.md for MLflow.
"""

import sys
from pathlib import Path

# run as a script: make the code next to this file win over any installed copy
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pipelines.cli import main_full  # noqa: E402

if __name__ == "__main__":
    sys.exit(main_full())
