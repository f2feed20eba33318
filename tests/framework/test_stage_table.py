"""The stage table (`stages/stage_table.json`): scheduling and presentation metadata of
the registered stages, outside the code their cache keys hash, and the command that
rewrites its durations from a store's measurements."""

from __future__ import annotations

import ast
import json
import sys
from pathlib import Path

import pytest

from stages.config import load_config
from stages.framework import stage_table
from stages.framework.keys import stage_sections
from stages.framework.provenance import direct_imports
from stages.framework.stage import Stage
from stages.framework.stage_table_update import main as update_main
from stages.framework.store import MANIFEST
from stages.registry import ALL_STAGES

FIELDS = stage_table.FIELDS


def own_classes(stage: type[Stage]) -> list[type]:
    """``stage`` and its base classes below `Stage` (e.g. the shared Nugget2D base)."""
    return list(stage.__mro__[: stage.__mro__.index(Stage)])


def test_every_registered_stage_has_a_row_and_every_row_a_stage():
    table = stage_table.read()
    names = {s.name for s in ALL_STAGES}
    assert sorted(names - set(table)) == []
    assert sorted(set(table) - names) == []  # no stale row of a removed or renamed stage
    for name in names:
        seconds = table[name]["expected_seconds"]
        values = list(seconds.values()) if isinstance(seconds, dict) else [seconds]
        assert values and all(v > 0 for v in values) and table[name]["description"].strip(), name
        # tiny is the label every other profile falls back to (stages.framework.estimates)
        assert not isinstance(seconds, dict) or "tiny" in seconds, name


def test_no_registered_stage_module_sets_the_table_fields():
    modules = {sys.modules[k.__module__].__file__ for s in ALL_STAGES for k in own_classes(s)}
    assigned = []
    for file in sorted(modules):
        for node in ast.walk(ast.parse(Path(file).read_text(encoding="utf-8"))):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target] \
                if isinstance(node, (ast.AnnAssign, ast.AugAssign)) else []
            flat = [e for t in targets for e in (t.elts if isinstance(t, ast.Tuple) else [t])]
            names = [t.id if isinstance(t, ast.Name) else getattr(t, "attr", "") for t in flat]
            assigned += [f"{file}:{node.lineno}: {n}" for n in names if n in FIELDS]
    assert not assigned, "set in stages/stage_table.json, not in the stage's code:\n" + "\n".join(assigned)
    assert not [(s.name, f) for s in ALL_STAGES for k in own_classes(s) for f in FIELDS if f in vars(k)]


def test_stage_modules_do_not_import_the_table():
    modules = {k.__module__ for s in ALL_STAGES for k in own_classes(s)}
    assert not [m for m in modules if "stages.framework.stage_table" in direct_imports(m)]


def test_registered_stages_read_their_rows():
    table = stage_table.read()
    stages = {s.name: s for s in ALL_STAGES}
    ae = stages["train_nugget2d_ae"]
    seconds = table["train_nugget2d_ae"]["expected_seconds"]
    assert ae.expected() == seconds["tiny"] and ae.expected("small") == seconds["small"]
    assert ae.expected("gpu1") == seconds["tiny"]  # a profile the table does not list: tiny's
    assert ae.describe() == table["train_nugget2d_ae"]["description"]
    assert ae.name_keys() == tuple(table["train_nugget2d_ae"]["run_name_keys"])
    cfg = load_config([])
    names = {s.name: s.run_name(stage_sections(s, cfg)) for s in ALL_STAGES}  # every row names a run
    assert names["train_nugget"] == "train_nugget r=0.1 l=3" and names["corpus_stats"] == "corpus_stats"


def test_a_class_that_sets_a_field_keeps_it_and_other_stages_get_the_defaults():
    listed = type("T", (Stage,), {"name": "train_nugget", "expected_seconds": 4, "run_name_keys": ()})
    assert (listed.expected(), listed.name_keys()) == (4.0, ())
    assert listed.describe() == stage_table.read()["train_nugget"]["description"]  # not set: the row
    unlisted = type("U", (Stage,), {"name": "not_in_the_table"})
    assert (unlisted.expected(), unlisted.describe(), unlisted.name_keys()) == (60.0, "", ())


def test_a_malformed_table_is_refused_naming_the_row(tmp_path):
    bad = tmp_path / "table.json"
    bad.write_text(json.dumps({"a": {"expected_seconds": -1, "colour": "red"}}))
    with pytest.raises(stage_table.StageTableError, match=r"a: unknown field 'colour'[\s\S]*a: expected_seconds"):
        stage_table.read(bad)
    bad.write_text("{")
    with pytest.raises(stage_table.StageTableError, match="not valid JSON"):
        stage_table.read(bad)
    with pytest.raises(stage_table.StageTableError, match="run_name_keys"):
        stage_table.write({"a": {"run_name_keys": "r=x"}}, tmp_path / "new.json")
    assert not (tmp_path / "new.json").exists()


def _measured(root: Path, stage: str, key: str, seconds: float, when: str, **labels: object) -> None:
    (root / stage / key).mkdir(parents=True)
    (root / stage / key / MANIFEST).write_text(json.dumps({"seconds": seconds, "finished_at": when, **labels}))


def test_update_rewrites_expected_seconds_from_a_store(tmp_path, capsys):
    table = tmp_path / "table.json"
    stage_table.write({"a": {"expected_seconds": 10, "description": "A", "run_name_keys": ["r=x.y"]},
                       "b": {"expected_seconds": 20, "description": "B"},
                       "c": {"expected_seconds": 5, "description": "C"}}, table)
    root = tmp_path / "root"
    _measured(root, "a", "k1", 90.0, "2026-01-01T00:00:00+0000")
    _measured(root, "a", "k2", 33.4, "2026-02-01T00:00:00+0000")  # the latest output counts
    _measured(root, "b", "k1", 20.2, "2026-01-01T00:00:00+0000")  # same whole seconds: unchanged
    _measured(root, "d", "k1", 7.0, "2026-01-01T00:00:00+0000")  # not in the table: ignored
    before = table.read_text()
    assert update_main([str(root), "--table", str(table), "--dry-run"]) == 0
    assert table.read_text() == before
    assert "a                      expected_seconds 10 -> 33" in capsys.readouterr().out
    assert update_main([str(root), "--table", str(table)]) == 0
    out = capsys.readouterr().out
    assert out.splitlines() == ["a                      expected_seconds 10 -> 33",
                                f"1 of 2 measured stages changed ({table})"]
    assert stage_table.read(table) == {"a": {"expected_seconds": 33, "description": "A", "run_name_keys": ["r=x.y"]},
                                       "b": {"expected_seconds": 20, "description": "B"},
                                       "c": {"expected_seconds": 5, "description": "C"}}


def test_update_keeps_an_estimate_per_profile_and_precision(tmp_path, capsys):
    table = tmp_path / "table.json"
    stage_table.write({"a": {"expected_seconds": 10, "description": "A"}}, table)
    root = tmp_path / "root"
    _measured(root, "a", "k1", 40.0, "2026-01-01T00:00:00+0000")  # names no profile: --profile's (tiny)
    _measured(root, "a", "k2", 400.0, "2026-01-02T00:00:00+0000", profile="small")
    _measured(root, "a", "k3", 250.4, "2026-01-03T00:00:00+0000", profile="small",
              config={"train.a": {"precision": "bf16"}})
    assert update_main([str(root), "--table", str(table)]) == 0
    assert stage_table.read(table)["a"]["expected_seconds"] == {"tiny": 40, "small": 400, "small/bf16": 250}


def test_update_refuses_a_root_without_measurements(tmp_path, capsys):
    table = tmp_path / "table.json"
    stage_table.write({"a": {"expected_seconds": 10, "description": "A"}}, table)
    (tmp_path / "empty").mkdir()
    assert update_main([str(tmp_path / "empty"), "--table", str(table)]) == 1
    assert update_main([str(tmp_path / "missing"), "--table", str(table)]) == 2
    assert "not a directory" in capsys.readouterr().err
