"""Scheduling and presentation metadata of the registered stages, kept out of the code a
cache key hashes: ``stages/stage_table.json``, one row per stage name::

    {"train_nugget": {"expected_seconds": {"tiny": 65, "small": 420},
                      "description": "Nugget AE/MT on Ray Train (DDP or DeepSpeed ZeRO-2).",
                      "run_name_keys": ["r=nugget.ratio", "l=nugget.scorer_layer"]}}

- ``expected_seconds``: the rough duration that ranks ready stages (longest path first)
  where no earlier run of the same profile and precision measured one
  (`stages.framework.dag.critical_path`): per label (``tiny``, ``small``, ``tiny/bf16``,
  ``gpu1-rehearsal``; `stages.framework.estimates`), or one number for every profile;
- ``description``: one line for ``python -m pipelines.stage --list``;
- ``run_name_keys``: config paths (inside the stage's ``config_keys``) whose values name
  its MLflow run (`stages.framework.stage.Stage.run_name`); optional, default none.

None of them changes what a stage computes, so re-timing or rewording a stage must not
re-key it: no stage module imports this table, and it is JSON, not Python (the keys hash
Python sources only). `stages.framework.stage.Stage` reads a row through
``expected()`` / ``describe()`` / ``name_keys()``; a stage the table does not list (a
test's throwaway stage) keeps its class attributes. ``python -m
stages.framework.stage_table_update ROOT`` rewrites ``expected_seconds`` from the
durations measured by past runs in an artifact root.
"""

from __future__ import annotations

import copy
import json
import os
from functools import cache
from pathlib import Path
from typing import Any

TABLE_FILE = Path(__file__).resolve().parents[1] / "stage_table.json"
FIELDS = ("expected_seconds", "description", "run_name_keys")


class StageTableError(ValueError):
    """The table file is missing or malformed; the message names the file and the row."""


def _check_row(name: str, row: Any) -> list[str]:
    """What is wrong with one row (empty when nothing)."""
    if not isinstance(row, dict):
        return [f"{name}: a row is an object of {', '.join(FIELDS)}, got {type(row).__name__}"]
    problems = [f"{name}: unknown field {k!r} (fields: {', '.join(FIELDS)})" for k in row if k not in FIELDS]
    seconds = row.get("expected_seconds", 1)
    values = list(seconds.values()) if isinstance(seconds, dict) else [seconds]
    if not values or any(isinstance(v, bool) or not isinstance(v, (int, float)) or not v > 0 for v in values):
        problems.append(f"{name}: expected_seconds must be a positive number or a mapping of labels (profile, "
                        f"profile/precision) to positive numbers, got {seconds!r}")
    if not isinstance(row.get("description", ""), str):
        problems.append(f"{name}: description must be a string, got {row['description']!r}")
    keys = row.get("run_name_keys", [])
    if not isinstance(keys, list) or not all(isinstance(k, str) and k for k in keys):
        problems.append(f"{name}: run_name_keys must be a list of config paths, got {keys!r}")
    return problems


@cache
def _load(path: Path) -> dict[str, dict[str, Any]]:
    try:
        table = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise StageTableError(f"stage table {path} is missing") from None
    except json.JSONDecodeError as exc:
        raise StageTableError(f"stage table {path} is not valid JSON: {exc}") from None
    if not isinstance(table, dict):
        raise StageTableError(f"stage table {path}: expected an object keyed by stage name")
    problems = [p for name, row in table.items() for p in _check_row(name, row)]
    if problems:
        raise StageTableError(f"stage table {path}:\n  " + "\n  ".join(problems))
    return table


def read(path: Path = TABLE_FILE) -> dict[str, dict[str, Any]]:
    """The whole table, checked (a copy: the caller may change it and `write` it)."""
    return copy.deepcopy(_load(Path(path)))


def lookup(name: str, field: str, path: Path = TABLE_FILE) -> Any:
    """Stage ``name``'s value of ``field`` (one of `FIELDS`), or None where the table has
    no such row or the row no such field. A list comes back as a tuple, a mapping as a copy."""
    if field not in FIELDS:
        raise KeyError(f"{field!r} is not a stage table field ({', '.join(FIELDS)})")
    value = _load(Path(path)).get(name, {}).get(field)
    if isinstance(value, dict):
        return dict(value)
    return tuple(value) if isinstance(value, list) else value


def write(table: dict[str, dict[str, Any]], path: Path = TABLE_FILE) -> None:
    """Replace the table file with ``table`` (checked first; sorted keys, so a rewrite
    changes only the values that changed)."""
    path = Path(path)
    problems = [p for name, row in table.items() for p in _check_row(name, row)]
    if problems:
        raise StageTableError(f"refusing to write stage table {path}:\n  " + "\n  ".join(problems))
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(table, indent=2, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(tmp, path)  # readers see the old table or the new one, never half of one
    _load.cache_clear()
