"""Run the Ray Tune sweep over Nugget's r x l x objective (stage ``sweep_nugget``) with
the upstream stages it needs; cached stages are reused.

    python pipelines/sweep.py [--dry-run] [key=value ...]
    python pipelines/sweep.py train.sweep.ratios=[0.1,0.25] train.sweep.scorer_layers=[0,3]
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pipelines.cli import main_full  # noqa: E402

if __name__ == "__main__":
    sys.exit(main_full(["run.targets=[sweep_nugget]", *sys.argv[1:]]))
