"""Code provenance of cache keys: the import closure of a stage's module, read with ast."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from stages.framework.code_identity import code_version
from stages.framework.provenance import closure_files, direct_imports, import_closure, module_file
from stages.registry import DAG

REPO = Path(__file__).resolve().parents[2]

SYNTHETIC = {
    "stages/__init__.py": "",
    "stages/a.py": """
import json
import numpy
import thirdparty.mod
import stages.b.deep
from stages.c import sub, helper
from . import rel
from .pkg2.inner import thing
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from nugget_core import typed
else:
    from nugget_core.elsewise import y


def lazy():
    from pipelines.lazy import go
    from nugget_core import LightName
    return go
""",
    "stages/b/__init__.py": "",
    "stages/b/deep.py": "from ..cyc1 import x\n",
    "stages/cyc1.py": "from stages import cyc2\nx = 1\n",
    "stages/cyc2.py": "import stages.cyc1\n",
    "stages/c/__init__.py": "def helper():\n    return 1\n",
    "stages/c/sub.py": "",
    "stages/c/unused.py": "",
    "stages/rel.py": "from ... import beyond_top  # invalid relative import: ignored\n",
    "stages/pkg2/__init__.py": "",
    "stages/pkg2/inner.py": "thing = 1\n",
    "stages/never.py": "",
    "nugget_core/__init__.py": '_EXPORTS = {"LightName": ".light", "Heavy": ".heavy"}\n',
    "nugget_core/typed.py": "",
    "nugget_core/elsewise.py": "",
    "nugget_core/light.py": "",
    "nugget_core/heavy.py": "",
    "nugget_core/other.py": "",
    "pipelines/__init__.py": "",
    "pipelines/lazy.py": "go = 1\n",
    "thirdparty/__init__.py": "",
    "thirdparty/mod.py": "",
}


@pytest.fixture
def synthetic(tmp_path: Path) -> Path:
    for rel, text in SYNTHETIC.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return tmp_path


def test_absolute_import_brings_parent_packages(synthetic):
    closure = import_closure("stages.a", synthetic)
    assert {"stages", "stages.a", "stages.b", "stages.b.deep"} <= set(closure)


def test_from_import_of_submodule_and_of_a_name(synthetic):
    closure = set(import_closure("stages.a", synthetic))
    assert {"stages.c", "stages.c.sub"} <= closure  # ``helper`` is a function of stages.c
    assert "stages.c.helper" not in closure and "stages.c.unused" not in closure


def test_relative_imports(synthetic):
    closure = set(import_closure("stages.a", synthetic))
    assert {"stages.rel", "stages.pkg2", "stages.pkg2.inner"} <= closure
    assert {"stages.cyc1", "stages.cyc2"} <= closure  # ``from ..cyc1`` in stages.b.deep


def test_lazy_and_type_checking_imports(synthetic):
    closure = set(import_closure("stages.a", synthetic))
    assert {"pipelines", "pipelines.lazy", "nugget_core", "nugget_core.elsewise"} <= closure
    assert "nugget_core.typed" not in closure  # under ``if TYPE_CHECKING:``: never runs


def test_lazy_export_table_resolves_to_the_defining_module(synthetic):
    closure = set(import_closure("stages.a", synthetic))
    assert "nugget_core.light" in closure  # ``from nugget_core import LightName``
    assert "nugget_core.heavy" not in closure  # exported, but not imported by stages.a


def test_nugget_core_lazy_exports_are_all_resolvable():
    """The real facade: every lazily exported name lives in the module the table names, so
    a key that follows the table covers the code behind the name."""
    import importlib

    from stages.framework.provenance import _lazy_exports

    for package in ("nugget_core", "nugget_core.nugget2d"):
        table = _lazy_exports(REPO, package)
        exported = set(importlib.import_module(package).__all__)
        if not table:
            continue
        assert set(table) == exported, package
        for name, module in table.items():
            assert hasattr(importlib.import_module(module), name), (package, name, module)


def test_third_party_and_unimported_modules_ignored(synthetic):
    closure = import_closure("stages.a", synthetic)
    assert not [m for m in closure if m.split(".")[0] in ("json", "numpy", "typing", "thirdparty")]
    assert "stages.never" not in closure and "nugget_core.other" not in closure
    assert closure == sorted(closure)
    files = closure_files("stages.a", synthetic)
    assert Path("stages/__init__.py") in files and Path("stages/a.py") in files
    assert all(not f.is_absolute() for f in files)


def test_cycle_terminates(synthetic):
    assert import_closure("stages.cyc1", synthetic) == ["stages", "stages.cyc1", "stages.cyc2"]
    assert import_closure("stages.cyc2", synthetic) == ["stages", "stages.cyc1", "stages.cyc2"]


def test_direct_imports(synthetic):
    direct = set(direct_imports("stages.a", synthetic))
    assert {"stages.b", "stages.b.deep", "pipelines.lazy"} <= direct
    assert "stages.cyc1" not in direct  # only through stages.b.deep


def test_real_stage_closures_are_narrow():
    for name in DAG.order:
        module = DAG.get(name).__module__
        closure = import_closure(module)
        assert module in closure and "stages" in closure
        assert "stages.registry" not in closure, name  # would make every key change on any edit
        assert not [m for m in closure if m.startswith("pipelines")], name
        # the framework's plumbing keys nothing (keys.FRAMEWORK_OUTPUT_VERSION covers it)
        assert not [m for m in closure if m.startswith("stages.framework")], name


def test_leftover_code_modules_attribute_ignored():
    stage = DAG.get("corpus_stats")
    twin = type("Twin", (), {
        "__module__": stage.__module__, "version": stage.version, "code_modules": ("nugget_core",),
    })
    assert code_version(twin) == code_version(stage)


KEYS_SCRIPT = """
import importlib, json, sys
from stages.config import load_config
from stages.framework.code_identity import code_version
from stages.framework.keys import cache_key

cfg = load_config([])
out = {}
for name, (module, qualname) in json.loads(sys.argv[1]).items():
    mod = importlib.import_module(module)
    assert mod.__file__.startswith(sys.argv[2]), mod.__file__
    stage = getattr(mod, qualname)
    ups = {u: "f" * 20 for u in stage.upstream}
    out[name] = {"key": cache_key(stage, cfg, ups), "code": code_version(stage)}
print(json.dumps(out))
"""


def _keys(copy: Path, stages: dict[str, tuple[str, str]]) -> dict[str, dict[str, str]]:
    env = {**os.environ, "PYTHONPATH": str(copy)}
    proc = subprocess.run(
        [sys.executable, "-c", KEYS_SCRIPT, json.dumps(stages), str(copy)],
        cwd=copy, env=env, capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _append(copy: Path, module: str, text: str) -> None:
    path = module_file(copy, module)
    assert path is not None, module
    with open(path, "a") as fh:
        fh.write(text)


def _edit_docstring(copy: Path, module: str) -> None:
    """Reword the module's docstring (every file under a package root of ours has one)."""
    path = module_file(copy, module)
    assert path is not None, module
    source = path.read_text()
    assert source.lstrip().startswith('"""'), f"{path} has no module docstring"
    path.write_text(source.replace('"""', '"""Reworded by the provenance test. ', 1))


def test_keys_follow_the_code_that_runs_in_real_stages(tmp_path):
    copy = tmp_path / "repo"
    ignore = shutil.ignore_patterns("__pycache__")
    for part in ("stages", "nugget_core", "pipelines", "conf"):
        shutil.copytree(REPO / part, copy / part, ignore=ignore)
    names = ("build_lm", "corpus_stats", "prepare_lm")
    stages = {n: (DAG.get(n).__module__, DAG.get(n).__qualname__) for n in names}
    closure = {n: import_closure(stages[n][0], copy) for n in names}

    # a module build_lm runs only through another module (not its own file's imports)
    build_lm = stages["build_lm"][0]
    own = {".".join(build_lm.split(".")[: i + 1]) for i in range(build_lm.count(".") + 1)}
    direct = set(direct_imports(build_lm, copy)) | own
    # (and outside corpus_stats's closure, whose key must not move below)
    indirect = [m for m in closure["build_lm"] if m not in direct and m not in closure["corpus_stats"]
                and module_file(copy, m).read_text().lstrip().startswith('"""')]
    assert indirect, closure["build_lm"]
    # a module outside corpus_stats's closure
    all_core = sorted(
        ".".join(p.relative_to(copy).with_suffix("").parts).removesuffix(".__init__")
        for p in (copy / "nugget_core").rglob("*.py")
    )
    outside = [m for m in all_core if m not in closure["corpus_stats"] and m != indirect[0]]
    assert outside
    edited = [indirect[0], outside[0]]

    before = _keys(copy, stages)
    # what never runs: comments, docstrings, the framework's plumbing
    for module in edited:
        _append(copy, module, "\n# provenance test edit\n")
    _edit_docstring(copy, indirect[0])
    for plumbing in ("stages.framework.tracking", "stages.framework.stage", "stages.framework.locks"):
        _append(copy, plumbing, "\n_PROVENANCE_TEST_EDIT = 1\n")
    assert _keys(copy, stages) == before, edited

    # what runs
    for module in edited:
        _append(copy, module, "\n_PROVENANCE_TEST_EDIT = 1\n")
    after = _keys(copy, stages)
    assert after["build_lm"]["key"] != before["build_lm"]["key"], edited
    assert after["build_lm"]["code"] != before["build_lm"]["code"]
    assert after["corpus_stats"] == before["corpus_stats"], edited
    touched = bool(set(edited) & set(closure["prepare_lm"]))
    assert (after["prepare_lm"] != before["prepare_lm"]) == touched, edited


def test_editing_one_nugget2d_stage_leaves_its_siblings_keys(tmp_path):
    copy = tmp_path / "repo"
    ignore = shutil.ignore_patterns("__pycache__")
    for part in ("stages", "nugget_core", "pipelines", "conf"):
        shutil.copytree(REPO / part, copy / part, ignore=ignore)
    names = ("train_nugget2d", "train_nugget2d_ft", "train_nugget2d_ar", "train_nugget2d_ae")
    stages = {n: (DAG.get(n).__module__, DAG.get(n).__qualname__) for n in names}
    assert len({module for module, _ in stages.values()}) == len(names)  # one module each
    before = _keys(copy, stages)
    for edited in names:
        _append(copy, stages[edited][0], f"\n_PROVENANCE_TEST_EDIT_{edited.upper()} = 1\n")
        after = _keys(copy, stages)
        assert after[edited]["key"] != before[edited]["key"], edited
        assert {n: after[n] for n in names if n != edited} == {n: before[n] for n in names if n != edited}, edited
        before = after
