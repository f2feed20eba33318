"""``python -m stages.framework.stage_table_update ROOT [--table FILE] [--dry-run]``:
rewrite the stage table's ``expected_seconds`` (`stages.framework.stage_table`) from the
durations past runs measured in the artifact root ROOT, and print what changed.

Each stage of the table takes, per label (its profile, and ``/bf16`` for a stage that
computed in bf16: `stages.framework.estimates`), the duration of its latest completed output
in ROOT under that label, any key, rounded to whole seconds (at least 1): the estimates are
rough by nature and whole numbers keep the table's diffs readable. A manifest written before
manifests named their profile counts for ``--profile`` (default tiny). Labels without a
measured output keep their value; outputs of stages the table does not list are ignored. The
numbers are for 2 CPUs (docs/profiles.md), so ROOT should hold clean runs; record where the
numbers came from in docs/profiles.md when committing them.
Exit status: 0 when something was measured (changed or not), 1 when ROOT held no
measured output of a stage of the table, 2 for a ROOT that is not there.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from stages.framework import stage_table
from stages.framework.estimates import FALLBACK_PROFILE, manifest_label, past_seconds
from stages.framework.store import ArtifactStore


def whole_seconds(seconds: float) -> int:
    """A measured duration as the table keeps it."""
    return max(1, round(seconds))


def measured(store: ArtifactStore, names: list[str], unlabelled: str) -> dict[str, dict[str, float]]:
    """Per stage, per label, the duration of its latest completed output in ``store``; a
    manifest naming no profile counts for the profile ``unlabelled``."""
    found: dict[str, dict[str, float]] = {}
    for name in names:
        try:
            manifests = [m if "profile" in m else {**m, "profile": unlabelled} for m in store.manifests(name)]
        except (OSError, ValueError):
            continue
        for wanted in sorted({label for m in manifests if (label := manifest_label(m)) is not None}):
            latest = past_seconds({name: manifests}, {name: wanted})
            if latest:
                found.setdefault(name, {})[wanted] = latest[name]
    return found


def update(root: str, table_file: Path = stage_table.TABLE_FILE, dry_run: bool = False, unlabelled: str = "tiny"
           ) -> tuple[dict[str, tuple[Any, Any]], list[str]]:
    """Rewrite ``table_file``'s ``expected_seconds`` from ROOT's measured durations
    (nothing written with ``dry_run`` or when nothing changed). Returns the changes,
    ``{stage: (old, new)}``, and the stages of the table with a measured duration."""
    table = stage_table.read(table_file)
    seconds = measured(ArtifactStore(root), sorted(table), unlabelled)
    changes: dict[str, tuple[Any, Any]] = {}  # old: None where the table had none
    for name, by_label in seconds.items():
        old = table[name].get("expected_seconds")
        merged = dict(old) if isinstance(old, dict) else ({} if old is None else {FALLBACK_PROFILE: old})
        merged.update({k: whole_seconds(v) for k, v in by_label.items()})
        # tiny's alone is one number: every other profile falls back to tiny's (estimates.table_seconds)
        new: Any = merged[FALLBACK_PROFILE] if set(merged) == {FALLBACK_PROFILE} else merged
        if old != new:
            changes[name] = (old, new)
            table[name]["expected_seconds"] = new
    if changes and not dry_run:
        stage_table.write(table, table_file)
    return changes, sorted(seconds)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m stages.framework.stage_table_update",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("root", help="artifact root of past runs (a path or an fsspec URI)")
    parser.add_argument("--table", type=Path, default=stage_table.TABLE_FILE, help="the stage table to rewrite")
    parser.add_argument("--dry-run", action="store_true", help="print the changes, write nothing")
    parser.add_argument("--profile", default="tiny", help="the profile of manifests that name none (older runs)")
    args = parser.parse_args(argv)
    if "://" not in args.root and not Path(args.root).is_dir():
        print(f"artifact root {args.root} is not a directory", file=sys.stderr)
        return 2
    changes, stages = update(args.root, args.table, args.dry_run, args.profile)
    if not stages:
        print(f"no stage of {args.table} has a completed output under {args.root}; nothing to update",
              file=sys.stderr)
        return 1
    for name, (old, new) in sorted(changes.items()):
        print(f"{name:22s} expected_seconds {old if old is not None else '-'} -> {new}")
    verb = "would change" if args.dry_run else "changed"
    print(f"{len(changes)} of {len(stages)} measured stages {verb} ({args.table})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
