"""``python -m stages.framework.stage_table_update ROOT [--table FILE] [--dry-run]``:
rewrite the stage table's ``expected_seconds`` (`stages.framework.stage_table`) from the
durations past runs measured in the artifact root ROOT, and print what changed.

Each stage of the table takes the duration of its latest completed output in ROOT, any
key, read by the reader the scheduler uses (`stages.framework.executor.past_seconds`),
rounded to whole seconds (at least 1): the estimates are rough by nature and whole
numbers keep the table's diffs readable. Stages without a measured output keep their
value; outputs of stages the table does not list are ignored. The table's numbers are for
``profile=tiny`` on 2 CPUs (docs/profiles.md), so ROOT should hold a clean run of that
profile; record where the numbers came from in docs/profiles.md when committing them.
Exit status: 0 when something was measured (changed or not), 1 when ROOT held no
measured output of a stage of the table, 2 for a ROOT that is not there.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from stages.framework import stage_table
from stages.framework.executor import past_seconds
from stages.framework.store import ArtifactStore


def whole_seconds(seconds: float) -> int:
    """A measured duration as the table keeps it."""
    return max(1, round(seconds))


def update(root: str, table_file: Path = stage_table.TABLE_FILE, dry_run: bool = False
           ) -> tuple[dict[str, tuple[float | None, int]], list[str]]:
    """Rewrite ``table_file``'s ``expected_seconds`` from ROOT's measured durations
    (nothing written with ``dry_run`` or when nothing changed). Returns the changes,
    ``{stage: (old, new)}``, and the stages of the table with a measured duration."""
    table = stage_table.read(table_file)
    measured = past_seconds(ArtifactStore(root), sorted(table))
    changes: dict[str, tuple[float | None, int]] = {}  # old: None where the table had none
    for name, seconds in measured.items():
        old, new = table[name].get("expected_seconds"), whole_seconds(seconds)
        if old != new:
            changes[name] = (old, new)
            table[name]["expected_seconds"] = new
    if changes and not dry_run:
        stage_table.write(table, table_file)
    return changes, sorted(measured)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m stages.framework.stage_table_update",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("root", help="artifact root of past runs (a path or an fsspec URI)")
    parser.add_argument("--table", type=Path, default=stage_table.TABLE_FILE, help="the stage table to rewrite")
    parser.add_argument("--dry-run", action="store_true", help="print the changes, write nothing")
    args = parser.parse_args(argv)
    if "://" not in args.root and not Path(args.root).is_dir():
        print(f"artifact root {args.root} is not a directory", file=sys.stderr)
        return 2
    changes, measured = update(args.root, args.table, args.dry_run)
    if not measured:
        print(f"no stage of {args.table} has a completed output under {args.root}; nothing to update",
              file=sys.stderr)
        return 1
    for name, (old, new) in sorted(changes.items()):
        print(f"{name:22s} expected_seconds {old if old is not None else '-'} -> {new}")
    verb = "would change" if args.dry_run else "changed"
    print(f"{len(changes)} of {len(measured)} measured stages {verb} ({args.table})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
